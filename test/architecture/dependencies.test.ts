/**
 * package.json lists only what is used: every runtime dependency is imported by
 * src/ or views/, or is a required (non-optional) peer of one that is; a package only tests and benches
 * use is a devDependency; the source imports nothing undeclared; docs/dependencies.md names them all.
 * The runtime dependencies are the kernel's (package.json `dependencies`) and the server's (the
 * `server` workspace's manifest, which package.json repeats as optional peers).
 */
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { importsOf, ROOT, sourceFiles } from "./importGraph.ts"

interface Manifest {
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly peerDependenciesMeta?: Record<string, { readonly optional?: boolean }>
}
const manifest = (dir: string): Promise<Manifest> => Bun.file(join(dir, "package.json")).json()
const own = await manifest(ROOT)
const server = await manifest(join(ROOT, "server"))
const runtime = [...Object.keys(own.dependencies ?? {}), ...Object.keys(server.dependencies ?? {})]
const dev = Object.keys(own.devDependencies ?? {})

/**
 * Runtime dependencies no source file imports yet, each with why it stays. `@effect/platform-bun`
 * gives the CLI its `runMain`: delete the line once `src/cli/` imports it.
 */
const NOT_IMPORTED_YET: Readonly<Record<string, string>> = {}
/** Used by tools, not imports: the type checker and its ambient types, the unused-code check, the formatter. */
const TOOLING = ["typescript", "@types/bun", "knip", "@biomejs/biome"]

const packageOf = (specifier: string): string | undefined => {
  if (
    specifier.startsWith(".") ||
    specifier.startsWith("/") ||
    /^(node|bun):/.test(specifier) ||
    specifier === "bun" ||
    specifier === "bun:test"
  )
    return undefined
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]
}

// Besides import statements: `import.meta.resolve("pkg/…")`, `Bun.resolveSync("pkg", …)`, `require.resolve`,
// and a path into node_modules (a server started as a separate process).
// (A name resolved through another package's own `createRequire` is that package's dependency, not ours.)
const RESOLVED =
  /(?:import\.meta\.resolve|Bun\.resolveSync|createRequire\(import\.meta\.url\)\.resolve|require\.resolve)\(\s*["']([^"'.][^"']*)["']/g
const NODE_MODULES_PATH = /"node_modules",\s*"(@[^"]+)",\s*"([^"]+)"|"node_modules",\s*"([^@"][^"]*)"/g

const packagesUsedBy = async (roots: ReadonlyArray<string>): Promise<Map<string, string>> => {
  const used = new Map<string, string>()
  for (const file of sourceFiles(roots)) {
    const text = await Bun.file(join(ROOT, file)).text()
    const specifiers = [
      ...(await importsOf(file)).map((i) => i.specifier),
      ...[...text.matchAll(RESOLVED)].map((m) => m[1]!),
      ...[...text.matchAll(NODE_MODULES_PATH)].map((m) => (m[1] !== undefined ? `${m[1]}/${m[2]}` : m[3]!))
    ]
    for (const s of specifiers) {
      const pkg = packageOf(s)
      if (pkg !== undefined && !used.has(pkg)) used.set(pkg, file)
    }
  }
  return used
}

const inSource = await packagesUsedBy(["src", "views"])
const inTests = await packagesUsedBy(["test", "bench"])

/** The kept runtime set: what the source imports, closed over required peers. */
const requiredClosure = async (roots: ReadonlyArray<string>): Promise<Map<string, string>> => {
  const why = new Map<string, string>(roots.map((r) => [r, "imported"]))
  const queue = [...roots]
  while (queue.length > 0) {
    const pkg = queue.shift()!
    const m = await manifest(join(ROOT, "node_modules", pkg))
    for (const peer of Object.keys(m.peerDependencies ?? {})) {
      if (m.peerDependenciesMeta?.[peer]?.optional === true || why.has(peer)) continue
      why.set(peer, `required peer of ${pkg}`)
      queue.push(peer)
    }
  }
  return why
}

describe("dependencies", () => {
  test("every runtime dependency is imported by src/ or views/, or is a required peer of one that is", async () => {
    const roots = runtime.filter((d) => inSource.has(d) || d in NOT_IMPORTED_YET)
    const kept = await requiredClosure(roots)
    expect(runtime.filter((d) => !kept.has(d))).toEqual([])
  })

  test("NOT_IMPORTED_YET names only packages the source does not import yet (delete the line once it does)", () => {
    expect(Object.keys(NOT_IMPORTED_YET).filter((d) => inSource.has(d) || !runtime.includes(d))).toEqual([])
  })

  test("a package only tests or benches use is a devDependency", () => {
    const testOnly = runtime.filter((d) => !inSource.has(d) && inTests.has(d))
    // A required peer may also be imported by a test; only a package nothing in src/ needs is wrong here.
    expect(testOnly.filter((d) => d !== "effect" && !(d in NOT_IMPORTED_YET))).toEqual([])
  })

  test("every devDependency is used by test/ or bench/ (or is tooling)", () => {
    expect(dev.filter((d) => !inTests.has(d) && !TOOLING.includes(d) && !d.startsWith("@types/"))).toEqual([])
  })

  test("src/ and views/ import only declared runtime dependencies", () => {
    const bad = [...inSource].filter(([pkg]) => !runtime.includes(pkg)).map(([pkg, file]) => `${file} → ${pkg}`)
    expect(bad).toEqual([])
  })

  test("the server's packages are package.json's optional peers, at the same versions, and none is also the kernel's", () => {
    expect(own.peerDependencies ?? {}).toEqual(server.dependencies ?? {})
    expect(Object.keys(own.peerDependencies ?? {}).filter((d) => own.peerDependenciesMeta?.[d]?.optional !== true)).toEqual([])
    expect(Object.keys(server.dependencies ?? {}).filter((d) => d in (own.dependencies ?? {}))).toEqual([])
  })

  test("docs/dependencies.md gives a reason for every package", async () => {
    const doc = await Bun.file(join(ROOT, "docs", "dependencies.md")).text()
    expect([...runtime, ...dev].filter((d) => !doc.includes(`\`${d}\``))).toEqual([])
  })
})
