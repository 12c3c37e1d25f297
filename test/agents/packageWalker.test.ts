/**
 * One package walker and one depth rule for every way a package folder is read: `kintsugi agents
 * validate` and the testing kit (loadPackageFiles), and the catalog's built-ins (readTree). Every
 * built-in package passes it, its evals' fixtures included.
 */
import { afterAll, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BUILTIN_AGENTS_DIR, readTree } from "../../src/agents/builtins.ts"
import { loadPackageFiles, MAX_PACKAGE_DEPTH } from "../../src/agents/loadPackageFiles.ts"
import { loadAgentDefinition } from "../../src/testing/runAgent.ts"

const dirs: Array<string> = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A package whose one fixture file lies `folders` folders below the root. */
const createDeepPackage = (folders: number): string => {
  const root = mkdtempSync(join(tmpdir(), "kintsugi-deep-"))
  dirs.push(root)
  writeFileSync(join(root, "AGENT.md"), "---\nname: deep\nversion: 1\ndescription: Deep fixtures.\n---\nRead.\n")
  const deep = join(root, ...Array.from({ length: folders }, (_, i) => `d${i + 1}`))
  mkdirSync(deep, { recursive: true })
  writeFileSync(join(deep, "Leaf.java"), "class Leaf {}\n")
  return root
}

test("every built-in package loads through the walker with no problem, and its definition through the testing kit", async () => {
  for (const name of ["codebase-inventory", "domain-rules"]) {
    const loaded = await loadPackageFiles(join(BUILTIN_AGENTS_DIR, name))
    expect({ name, problems: "problems" in loaded ? loaded.problems : loaded }).toEqual({ name, problems: [] })
    expect((await loadAgentDefinition(join(BUILTIN_AGENTS_DIR, name))).id).toBe(name)
  }
})

test("a file at the depth limit is read; one folder deeper is refused by validate's walker and the catalog's alike", async () => {
  const atLimit = await loadPackageFiles(createDeepPackage(MAX_PACKAGE_DEPTH))
  expect("problems" in atLimit ? atLimit.problems : atLimit).toEqual([])
  expect(readTree(createDeepPackage(MAX_PACKAGE_DEPTH)).map((f) => f.path.split("/").length)).toContain(MAX_PACKAGE_DEPTH + 1)

  const tooDeep = createDeepPackage(MAX_PACKAGE_DEPTH + 1)
  const refused = await loadPackageFiles(tooDeep)
  const deepest = Array.from({ length: MAX_PACKAGE_DEPTH + 1 }, (_, i) => `d${i + 1}`).join("/")
  expect("problems" in refused ? refused.problems : refused).toEqual([
    { path: deepest, message: `folders nested deeper than ${MAX_PACKAGE_DEPTH}` }
  ])
  expect(() => readTree(tooDeep)).toThrow(`${deepest}: folders nested deeper than ${MAX_PACKAGE_DEPTH}`)
})
