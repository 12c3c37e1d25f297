/**
 * A consumer pays only for the kernel: everything the package's entries (`kintsugi-runtime/kernel`,
 * `/contract`, `/testing`, and the job child `runAgent` starts) reach, transitively, through static,
 * type-only and dynamic imports, is kernel code and the kernel's dependencies. None of it is a server
 * module (HTTP, database, worker, access, CLI, providers' store, telemetry, web backends, views) or a
 * package only the server needs (the `server` workspace's: Elysia, PGlite, pg, @effect/sql,
 * OpenTelemetry…). A failure names each one found and the chain of imports that reaches it.
 */
import { describe, expect, test } from "bun:test"
import { dirname, join, relative, resolve } from "node:path"
import { importsOf, ROOT } from "./importGraph.ts"

interface Manifest {
  readonly exports?: Record<string, string>
  readonly dependencies?: Record<string, string>
}
const own: Manifest = await Bun.file(join(ROOT, "package.json")).json()
const server: Manifest = await Bun.file(join(ROOT, "server", "package.json")).json()

/** The server's own modules: no kernel entry may reach any of them. */
const SERVER_MODULES = [
  "src/http/",
  "src/db/",
  "src/worker/",
  "src/access/",
  "src/cli/",
  "src/providers/",
  "src/telemetry/",
  "src/web/",
  "views/",
  "src/cli.ts",
  "src/main.ts"
]
const isServerModule = (file: string) => SERVER_MODULES.some((m) => (m.endsWith("/") ? file.startsWith(m) : file === m))

const packageOf = (specifier: string): string | undefined => {
  if (specifier.startsWith(".") || specifier.startsWith("/") || /^(node|bun):/.test(specifier) || specifier === "bun") return undefined
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]
}

// Besides imports: a file started by path (`join(import.meta.dir, "..", "x.ts")` for a child process,
// `new URL("./x.ts", import.meta.url)` for a worker) and a package resolved by name.
const JOINED_PATH = /join\(\s*import\.meta\.dir((?:\s*,\s*"[^"]+")+)\s*\)/g
const URL_PATH = /new URL\(\s*"(\.[^"]+\.ts)"\s*,\s*import\.meta\.url\s*\)/g
const RESOLVED = /(?:import\.meta\.resolve|Bun\.resolveSync|require\.resolve)\(\s*["']([^"'.][^"']*)["']/g

/** What one file reaches: repository files and package specifiers. */
const reachedFrom = async (file: string): Promise<{ files: Array<string>; packages: Array<string> }> => {
  const text = await Bun.file(join(ROOT, file)).text()
  const imports = await importsOf(file)
  const files = imports.flatMap((i) => (i.target !== undefined ? [i.target] : []))
  const packages = imports.flatMap((i) => (i.target === undefined ? [i.specifier] : []))
  const here = dirname(join(ROOT, file))
  for (const m of text.matchAll(JOINED_PATH)) {
    const parts = [...m[1]!.matchAll(/"([^"]+)"/g)].map((p) => p[1]!)
    if (parts.at(-1)?.endsWith(".ts") === true) files.push(relative(ROOT, resolve(here, ...parts)))
  }
  for (const m of text.matchAll(URL_PATH)) files.push(relative(ROOT, resolve(here, m[1]!)))
  for (const m of text.matchAll(RESOLVED)) packages.push(m[1]!)
  return { files, packages }
}

const entries = Object.entries(own.exports ?? {})
  .filter(([name, target]) => name !== "./package.json" && target.endsWith(".ts"))
  .map(([, target]) => relative(ROOT, join(ROOT, target)))

/** Breadth-first from the entries: each reached file with the file that first reached it. */
const walk = async () => {
  const via = new Map<string, string | undefined>(entries.map((e) => [e, undefined]))
  const packages = new Map<string, string>()
  const queue = [...entries]
  while (queue.length > 0) {
    const file = queue.shift()!
    if (!file.endsWith(".ts")) continue
    const { files, packages: specifiers } = await reachedFrom(file)
    for (const next of files)
      if (!via.has(next)) {
        via.set(next, file)
        queue.push(next)
      }
    for (const s of specifiers) {
      const pkg = packageOf(s)
      if (pkg !== undefined && !packages.has(pkg)) packages.set(pkg, file)
    }
  }
  return { via, packages }
}
const { via, packages } = await walk()

/** `entry → … → file`: how the entries reach `file`. */
const chain = (file: string): string => {
  const path = [file]
  for (let at = via.get(file); at !== undefined; at = via.get(at)) path.unshift(at)
  return path.join(" → ")
}

describe("what the package's entries reach", () => {
  test("the entries are the three exports and the graph reaches the kernel, its tools and the job child", () => {
    expect(entries.sort()).toEqual(["src/contract/index.ts", "src/kernel/index.ts", "src/testing/index.ts"])
    for (const file of [
      "src/kernel/Kernel.ts",
      "src/tools/read.ts",
      "src/jobChild/entry.ts",
      "src/jobChild/load.ts",
      "src/tools/grepWorker.ts"
    ])
      expect(via.has(file)).toBe(true)
  })

  test("no server module", () => {
    const found = [...via.keys()].filter(isServerModule)
    console.log(
      `kernel entries reach ${via.size} files and ${packages.size} packages; server modules among them: ${found.length === 0 ? "none" : found.join(", ")}`
    )
    expect(found.map(chain)).toEqual([])
  })

  test("no package but the kernel's dependencies (none of the server workspace's)", () => {
    const kernel = Object.keys(own.dependencies ?? {})
    const serverOnly = Object.keys(server.dependencies ?? {})
    expect(serverOnly.length).toBeGreaterThan(0)
    const outside = [...packages].filter(([pkg]) => !kernel.includes(pkg))
    expect(outside.map(([pkg, file]) => `${chain(file)} → ${pkg}${serverOnly.includes(pkg) ? " (the server's)" : ""}`)).toEqual([])
  })
})
