/**
 * The import graph of the repository's own TypeScript: every file under the given roots, each with the
 * specifiers it imports (static, `export … from`, type-only and string-literal dynamic imports).
 */
import { existsSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

export const ROOT = resolve(import.meta.dir, "..", "..")

/** One import of one file: the specifier as written, the repository file it resolves to (if local). */
export interface ImportEdge {
  readonly specifier: string
  /** Repository-relative path (`src/tools/git.ts`), or undefined for a package / `node:` / `bun:` import. */
  readonly target: string | undefined
  /** Erased at run time (`import type`, `export type`, all-`type` named imports): layering counts it, cycles do not. */
  readonly typeOnly: boolean
}

const transpiler = new Bun.Transpiler({ loader: "ts" })

// Statement-level forms. The clause between the keyword and `from` holds only names, braces, commas,
// `*` and whitespace, so a `from "…"` inside a string or an expression is never taken for an import.
const STATIC_FROM = /^[ \t]*(import|export)\s+([\w\s{},*$]*?)\s*from\s*["']([^"']+)["']/gm
const SIDE_EFFECT = /^[ \t]*import\s*["']([^"']+)["']/gm
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g

const resolveLocal = (fromFile: string, specifier: string): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const base = resolve(dirname(join(ROOT, fromFile)), specifier)
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return relative(ROOT, candidate)
  }
  return relative(ROOT, base)
}

/** Every import of one file (repository-relative path). */
export const importsOf = async (file: string): Promise<ReadonlyArray<ImportEdge>> => {
  // A `#!` line (src/cli.ts) is not TypeScript to the transpiler.
  const text = (await Bun.file(join(ROOT, file)).text()).replace(/^#!.*/, "")
  // What survives type erasure: Bun's own scanner, which drops `import type` and unused type names.
  const runtime = new Set(transpiler.scanImports(text).map((i) => i.path))
  const found = new Map<string, boolean>()
  const add = (specifier: string, typeOnly: boolean) => found.set(specifier, (found.get(specifier) ?? true) && typeOnly)
  for (const m of text.matchAll(STATIC_FROM)) add(m[3]!, !runtime.has(m[3]!))
  for (const m of text.matchAll(SIDE_EFFECT)) add(m[1]!, false)
  // `typeof import("./x.ts")` in a type position is a dynamic-looking type reference: the scanner tells.
  for (const m of text.matchAll(DYNAMIC)) add(m[1]!, !runtime.has(m[1]!))
  return [...found].map(([specifier, typeOnly]) => ({ specifier, target: resolveLocal(file, specifier), typeOnly }))
}

/** Every `.ts` file under the roots (repository-relative), sorted. */
export const sourceFiles = (roots: ReadonlyArray<string>): Array<string> =>
  roots.flatMap((root) => [...new Bun.Glob("**/*.ts").scanSync({ cwd: join(ROOT, root) })].map((f) => join(root, f))).sort()

/** The graph: file → its imports. */
export const importGraph = async (roots: ReadonlyArray<string>): Promise<Map<string, ReadonlyArray<ImportEdge>>> =>
  new Map(await Promise.all(sourceFiles(roots).map(async (f) => [f, await importsOf(f)] as const)))

/**
 * Strongly connected components with more than one file (or a file importing itself), by Tarjan's
 * algorithm, each returned as one cycle path `a → b → … → a` through its files.
 */
export const cycles = (edges: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: Array<string> = []
  const components: Array<Array<string>> = []
  let next = 0
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) components.push(component)
    }
  }
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v)
  return components.map((component) => cyclePath(edges, new Set(component)))
}

/** One concrete cycle inside a component: breadth-first from its first file back to itself. */
const cyclePath = (edges: ReadonlyMap<string, ReadonlyArray<string>>, component: ReadonlySet<string>): Array<string> => {
  const start = [...component].sort()[0]!
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const v = queue.shift()!
    for (const w of edges.get(v) ?? []) {
      if (!component.has(w)) continue
      if (w === start) {
        const path = [start]
        for (let at: string | undefined = v; at !== undefined && at !== start; at = previous.get(at)) path.splice(1, 0, at)
        return [...path, start]
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  return [start, start]
}
