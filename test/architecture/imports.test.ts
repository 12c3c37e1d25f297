/**
 * The import rules of ARCHITECTURE.md §3: the library layers never reach the server, nothing
 * imports the composition root or the CLI from below, views never import the portal's controllers, and
 * no source file takes part in an import cycle (type-only imports count: they are dependencies too).
 */
import { describe, expect, test } from "bun:test"
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { cycles, importGraph, type ImportEdge } from "./importGraph.ts"

const graph = await importGraph(["src", "views"])

/** Known upward imports of `src/main.ts` or `src/cli/` (none: every command entry point is in `src/cli/`). */
const UPWARD_ALLOWED: ReadonlyArray<string> = []

const edges = function* (from: (file: string) => boolean): Generator<readonly [string, ImportEdge]> {
  for (const [file, imports] of graph) if (from(file)) for (const i of imports) yield [file, i]
}
const under =
  (...dirs: ReadonlyArray<string>) =>
  (file: string | undefined) =>
    file !== undefined && dirs.some((d) => file.startsWith(`${d}/`))
const show = (file: string, i: ImportEdge) => `${file} → ${i.target ?? i.specifier}`

describe("import rules", () => {
  test("the graph is read: every local import resolves to a source file", () => {
    expect(graph.size).toBeGreaterThan(100)
    const unresolved = [...edges(() => true)].filter(([, i]) => i.target?.endsWith(".ts") === true && !graph.has(i.target))
    expect(unresolved.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("src/contract imports nothing but effect and other contract files", () => {
    const bad = [...edges(under("src/contract"))].filter(([, i]) =>
      i.target !== undefined ? !under("src/contract")(i.target) : !/^effect(\/|$)/.test(i.specifier)
    )
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("kernel/, job/, tools/, contract/ never import db/, http/, worker/", () => {
    const bad = [...edges(under("src/kernel", "src/job", "src/tools", "src/contract"))].filter(([, i]) =>
      under("src/db", "src/http", "src/worker")(i.target)
    )
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("job/ (the per-job services, below kernel and tools) imports only contract/, job/ and packages", () => {
    const bad = [...edges(under("src/job"))].filter(([, i]) => i.target !== undefined && !under("src/job", "src/contract")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("net/ (URL policy, pinned fetch) imports only contract/, net/ and packages", () => {
    const bad = [...edges(under("src/net"))].filter(([, i]) => i.target !== undefined && !under("src/net", "src/contract")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("kernel/, job/, tools/ never import agents/ or providers/ (package rules are in contract/, the URL policy in net/)", () => {
    const bad = [...edges(under("src/kernel", "src/job", "src/tools"))].filter(([, i]) => under("src/agents", "src/providers")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("tools/ never imports kernel/ (the per-job services it uses are in job/)", () => {
    const bad = [...edges(under("src/tools"))].filter(([, i]) => under("src/kernel")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("testing/ (no provider, no key, no database) never imports db/, http/, worker/, providers/", () => {
    const bad = [...edges(under("src/testing"))].filter(([, i]) => under("src/db", "src/http", "src/worker", "src/providers")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("nothing imports main.ts or cli/ from below", () => {
    const top = (f: string) => f === "src/cli.ts" || under("src/cli")(f)
    const bad = [...edges((f) => !top(f))]
      .filter(([, i]) => i.target === "src/main.ts" || i.target === "src/cli.ts" || under("src/cli")(i.target))
      .map(([f, i]) => show(f, i))
    expect(bad.filter((e) => !UPWARD_ALLOWED.includes(e))).toEqual([])
  })

  test("the allowlist of upward imports holds only imports that still exist (delete the line once it is gone)", () => {
    const present = new Set([...edges(() => true)].map(([f, i]) => show(f, i)))
    expect(UPWARD_ALLOWED.filter((e) => !present.has(e))).toEqual([])
  })

  test("views never import the portal's controllers (or anything else under src/http)", () => {
    const bad = [...edges(under("views"))].filter(([, i]) => under("src/http")(i.target))
    expect(bad.map(([f, i]) => show(f, i))).toEqual([])
  })

  test("nothing at the top of src/ but cli.ts and main.ts (every other file lives in its layer's folder)", () => {
    const top = readdirSync(join(import.meta.dir, "..", "..", "src"), { withFileTypes: true }).filter((e) => !e.isDirectory())
    expect(top.map((e) => e.name).sort()).toEqual(["cli.ts", "main.ts"])
  })

  test("no import cycles", () => {
    const local = new Map(
      [...graph].map(([f, imports]) => [f, imports.flatMap((i) => (i.target !== undefined && graph.has(i.target) ? [i.target] : []))])
    )
    expect(cycles(local).map((c) => c.join(" → "))).toEqual([])
  })

  test("the cycle finder reports a cycle with its path", () => {
    const found = cycles(
      new Map([
        ["a", ["b"]],
        ["b", ["c"]],
        ["c", ["a", "d"]],
        ["d", []],
        ["e", ["e"]]
      ])
    )
    expect(found.map((c) => c.join(" → ")).sort()).toEqual(["a → b → c → a", "e → e"])
  })
})
