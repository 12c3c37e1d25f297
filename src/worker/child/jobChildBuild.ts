/**
 * `bun src/worker/child/jobChildBuild.ts <outDir>`: builds the job child's Bun bytecode bundle into `outDir`
 * (jobChildBundle.ts runs it in a process of its own, into a private directory it then renames into
 * place). The provider SDKs, QuickJS and re2js, which only some jobs use (SPLIT_SDKS), are bundled
 * apart, each into a bytecode bundle of its own under `outDir/sdk/`, which the main bundle requires by a
 * path relative to itself only when a job first needs it (a model call, a script, a pattern), and so
 * are our modules that import only such packages (LAZY_LEAVES, under `outDir/lazy/`), so a child does
 * not read and load their code at every start (Bun loads a bytecode bundle in time that grows with its
 * size). grep's search worker is a bytecode bundle of its own too (GREP_WORKER). Each SDK stays one module instance (one bundle, required from one place). pi-ai's catalog data likewise stays beside the bundle as JSON (PI_AI_DATA).
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { basename, dirname, join, relative, resolve } from "node:path"

/**
 * The packages bundled apart: [package, directory under `sdk/`]. Imported (by their bare name only) by
 * pi-ai's API implementations, which a job loads at its first model call through them, after job.started,
 * by codemode (quickJsModule.ts) at a job's first script, and re2js by the modules that compile a job's
 * deny patterns (at the first one: denyPatterns.ts), output schemas (jsonSchema.ts) and grep patterns.
 * Every import of a package, static, dynamic or require, gets the one bundle of it.
 */
export const SPLIT_SDKS: ReadonlyArray<readonly [string, string]> = [
  ["openai", "openai"],
  ["@anthropic-ai/sdk", "anthropic"],
  ["@google/genai", "google-genai"],
  ["quickjs-emscripten", "quickjs"],
  ["re2js", "re2js"]
]

/**
 * Modules of ours that import only packages some jobs use (nothing of ours, so no module is ever
 * instantiated twice), each built into a bytecode bundle of its own under `outDir/lazy/`, which the main
 * bundle requires by a path relative to itself when a job first needs it: the MCP SDK (with zod and ajv
 * behind it) and ajv's engines of the output checks stay out of the bundle every child loads.
 */
export const LAZY_LEAVES: ReadonlyArray<readonly [string, string]> = [
  [join("src", "tools", "mcp", "mcpSdk.ts"), "mcpSdk"],
  [join("src", "kernel", "ajvEngines.ts"), "ajvEngines"]
]

/**
 * grep's search worker (a Bun Worker the job child starts: grepPool.ts), built into a bytecode bundle
 * of its own at `tools/grepWorker.js` beside the main bundle, where grepWorkerUrl finds it: the
 * bundle's workers never load (and transpile) the TypeScript sources.
 */
export const GREP_WORKER: readonly [string, string] = [join("src", "tools", "grepWorker.ts"), join("tools", "grepWorker.js")]

/**
 * pi-ai's catalog of built-in providers (`providers/data/*.json`, a third of the bundle) is read only for
 * a built-in provider config (PiAiModels.ts imports `providers/all` then): its JSON files are copied
 * beside the bundle, into PI_AI_DATA, and required from there (plain data: nothing to share).
 */
const PI_AI_DATA = "pi-ai-data"
const PI_AI_PROVIDERS = `${["", "node_modules", "@earendil-works", "pi-ai", "dist", "providers", ""].join("/")}`

/**
 * Effect's logger module reads `process.stdout` as it is evaluated (for its pretty logger's colours),
 * and Bun builds `process.stdout` on first access: a stream that loads Node's streams, a noticeable
 * part of the job child's start. The bundle gets the two constants without that read: `process.stdout`
 * always exists in Bun, and the job child's stdout carries its events, never a terminal (nor does the
 * child install the pretty logger, their only reader). A changed Effect fails the build (the child then
 * starts from the sources) instead of silently reading stdout again.
 */
const EFFECT_LOGGER = /\/node_modules\/effect\/dist\/(esm|cjs)\/internal\/logger\.js$/
const STDOUT_READS: ReadonlyArray<readonly [string, string]> = [
  [
    `typeof process === "object" && process !== null && typeof process.stdout === "object" && process.stdout !== null;`,
    `typeof process === "object" && process !== null;`
  ],
  [`hasProcessStdout && process.stdout.isTTY === true;`, `false;`]
]

/** Effect's logger module without its reads of `process.stdout` (EFFECT_LOGGER). */
export const withoutStdoutReads = (source: string): string => {
  let out = source
  for (const [read, value] of STDOUT_READS) {
    if (!out.includes(read))
      throw new Error(`effect's internal/logger.js changed: ${read} not found (update STDOUT_READS in jobChildBuild.ts)`)
    out = out.replace(read, value)
  }
  return out
}

/**
 * Every bundle is minified, its whitespace and syntax only: Bun reads a bundle's whole text at every
 * start. Identifiers are not renamed: Bun 1.4.5 ignores `keepNames`,
 * and the SDKs read their own class names (the OpenAI client's User-Agent is `${constructor.name}/JS`,
 * errors name themselves after their class, Effect's `Schema.instanceOf` titles too).
 */
const MINIFY = { whitespace: true, syntax: true } as const

/** Beside the main bundle: the files it was built from (Bun's metafile), relative to the installation. */
export const BUNDLE_INPUTS = "inputs.json"

const INSTALL_DIR = resolve(import.meta.dir, "..", "..", "..")
const ENTRY = join(INSTALL_DIR, "src", "jobChild", "entry.ts")
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

/** Builds every bundle into `outDir` from `entry` (the job child's by default); the messages of a failed build, or none. */
export const buildJobChild = async (outDir: string, entry: string = ENTRY): Promise<ReadonlyArray<string>> => {
  // Resolved as the bundle's require() would resolve it from the installation.
  const requireFromInstall = createRequire(join(INSTALL_DIR, "package.json"))
  /** One bytecode bundle of its own under `outDir/dir`: its path relative to the main bundle, or what failed. */
  const buildApart = async (
    entrypoint: string,
    dir: string,
    what: string
  ): Promise<{ readonly path: string } | { readonly error: string }> => {
    const built = await Bun.build({
      entrypoints: [entrypoint],
      outdir: join(outDir, dir),
      target: "bun",
      format: "cjs",
      bytecode: true,
      minify: MINIFY
    })
    const entry = built.outputs.find((o) => o.kind === "entry-point")
    if (!built.success || entry === undefined)
      return { error: `${what}: ${built.logs.map((l) => l.message).join("; ") || "no entry point"}` }
    return { path: `./${relative(outDir, entry.path)}` }
  }
  const splitPaths = new Map<string, string>()
  for (const [pkg, dir] of SPLIT_SDKS) {
    const built = await buildApart(requireFromInstall.resolve(pkg), join("sdk", dir), pkg)
    if ("error" in built) return [built.error]
    splitPaths.set(pkg, built.path)
  }
  const leafPaths = new Map<string, string>()
  for (const [file, name] of LAZY_LEAVES) {
    const built = await buildApart(join(INSTALL_DIR, file), join("lazy", name), file)
    if ("error" in built) return [built.error]
    leafPaths.set(join(INSTALL_DIR, file), built.path)
  }
  const grepWorker = await buildApart(join(INSTALL_DIR, GREP_WORKER[0]), dirname(GREP_WORKER[1]), GREP_WORKER[0])
  if ("error" in grepWorker) return [grepWorker.error]
  if (grepWorker.path !== `./${GREP_WORKER[1]}`) return [`${GREP_WORKER[0]}: built as ${grepWorker.path}, not ./${GREP_WORKER[1]}`]
  const leafFilter = new RegExp(`/(${LAZY_LEAVES.map(([file]) => escape(basename(file))).join("|")})$`)
  const filter = new RegExp(`^(${SPLIT_SDKS.map(([pkg]) => escape(pkg)).join("|")})$`)
  const main = await Bun.build({
    entrypoints: [entry],
    outdir: outDir,
    target: "bun",
    format: "cjs",
    bytecode: true,
    minify: MINIFY,
    metafile: true,
    plugins: [
      {
        name: "kintsugi-split-sdks",
        setup: (build) => {
          build.onResolve({ filter }, (args) => ({ path: splitPaths.get(args.path) ?? args.path, external: true }))
          build.onResolve({ filter: leafFilter }, (args) => {
            const leaf = leafPaths.get(resolve(dirname(args.importer), args.path))
            return leaf === undefined ? undefined : { path: leaf, external: true }
          })
          build.onLoad({ filter: EFFECT_LOGGER }, async (args) => ({
            contents: withoutStdoutReads(await Bun.file(args.path).text()),
            loader: "js"
          }))
          build.onResolve({ filter: /^\.\/data\/[^/]+\.json$/ }, (args) => {
            if (!args.importer.includes(PI_AI_PROVIDERS)) return undefined
            mkdirSync(join(outDir, PI_AI_DATA), { recursive: true })
            copyFileSync(resolve(dirname(args.importer), args.path), join(outDir, PI_AI_DATA, basename(args.path)))
            return { path: `./${PI_AI_DATA}/${basename(args.path)}`, external: true }
          })
        }
      }
    ]
  })
  if (!main.success) return main.logs.map((l) => l.message)
  writeFileSync(join(outDir, BUNDLE_INPUTS), JSON.stringify(Object.keys(main.metafile?.inputs ?? {}).sort()))
  return []
}

if (import.meta.main) {
  const outDir = process.argv[2]
  if (outDir === undefined) process.exit(2)
  void buildJobChild(resolve(outDir)).then(
    (problems) => {
      for (const p of problems) console.error(p)
      process.exit(problems.length === 0 ? 0 : 1)
    },
    (e: unknown) => {
      console.error(e instanceof Error ? e.message : String(e))
      process.exit(1)
    }
  )
}
