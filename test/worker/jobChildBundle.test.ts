/**
 * The job child's bytecode bundle: built from the sources into a cache keyed on their
 * content hash, atomically (two builders at once: one bundle, no half-built directory left), and it
 * runs a whole job — pi-ai inside the bundle sends the model request and the job completes, not just
 * `job.started` followed by exit 0 (pi-ai's `instrumentCache` must be defined inside the bundle).
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BUNDLE_INPUTS, LAZY_LEAVES, SPLIT_SDKS, withoutStdoutReads } from "../../src/worker/child/jobChildBuild.ts"
import { builtBundle, ensureBundle, removeOtherBundles, sourceKey } from "../../src/worker/child/jobChildBundle.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild } from "../support/jobChild.ts"
import { startAnthropicServer, startOpenAIServer } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

// Two builds at once on a loaded 2-core machine.
setDefaultTimeout(300_000)

const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-bundle-"))
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }))
let entry = ""

/** The files the main bundle was built from (Bun's metafile, written beside it): its minified text has no module comments. */
const bundleInputs = (dir: string): ReadonlyArray<string> => JSON.parse(readFileSync(join(dir, BUNDLE_INPUTS), "utf8")) as Array<string>

test("two builders at once: one complete bundle under the sources' key, nothing half-built left", async () => {
  const key = sourceKey()
  expect(key).toMatch(/^[0-9a-f]{32}$/)
  expect(sourceKey()).toBe(key)
  expect(builtBundle(cacheDir, key)).toBeUndefined()
  const [a, b] = await Promise.all([ensureBundle(cacheDir, key), ensureBundle(cacheDir, key)])
  expect(a).toBe(b)
  expect(builtBundle(cacheDir, key)).toBe(a)
  expect(existsSync(`${a}.jsc`)).toBe(true)
  expect(readdirSync(cacheDir)).toEqual([`job-child-${key}`])
  entry = a
})

test("a bundle of other sources is removed once built anew, unless a live process runs from it (a job child loads its SDK bundles lazily)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kintsugi-bundle-others-"))
  try {
    for (const key of ["in-use", "unused", "current"]) {
      mkdirSync(join(dir, `job-child-${key}`))
      writeFileSync(join(dir, `job-child-${key}`, "entry.js"), "await Bun.stdin.text()\n")
    }
    const entryInUse = join(dir, "job-child-in-use", "entry.js")
    const child = Bun.spawn(["bun", entryInUse, "run-job"], { stdin: "pipe", stdout: "ignore", stderr: "ignore" })
    try {
      await until(() => readFileSync(`/proc/${child.pid}/cmdline`, "latin1").includes(entryInUse) || undefined, {
        what: "the child's command line"
      })
      removeOtherBundles(dir, "current")
      expect(readdirSync(dir).sort()).toEqual(["job-child-current", "job-child-in-use"])
    } finally {
      child.stdin.end()
      await child.exited
    }
    removeOtherBundles(dir, "current")
    expect(readdirSync(dir)).toEqual(["job-child-current"])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.each(["openai-completions", "anthropic-messages"] as const)(
  "the bundled child runs a job through %s to job.completed, exit 0",
  async (api) => {
    expect(entry).not.toBe("")
    const server =
      api === "openai-completions"
        ? await startOpenAIServer([{ kind: "turn", text: "done" }])
        : await startAnthropicServer([{ kind: "turn", text: "done" }])
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    try {
      const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, api)]), { entry })
      expect(run.events.map((e) => e.type).filter((t) => t !== "span" && t !== "message.delta")).toEqual([
        "job.started",
        "usage",
        "grounding",
        "job.completed"
      ])
      expect(run.code).toBe(0)
      expect(server.requests.length).toBe(1)
    } finally {
      await server.stop()
      dirs.cleanup()
    }
  }
)

test("the bundled child checks an output against its JSON Schema (ajv loaded on demand inside the bundle): violation, fix, job.completed", async () => {
  expect(entry).not.toBe("")
  const write = (content: string) => ({ kind: "turn" as const, toolCalls: [{ name: "write", arguments: { path: "out.json", content } }] })
  const server = await startOpenAIServer([
    write('{ "n": "one" }'),
    { kind: "turn", text: "done" },
    write('{ "n": 1 }'),
    { kind: "turn", text: "fixed" }
  ])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  try {
    const schemaText = JSON.stringify({ type: "object", required: ["n"], properties: { n: { type: "integer" } } })
    const job = createJob(dirs, { agent: { tools: ["write"], outputs: [{ file: "out.json", schema: "schemas/out.json", schemaText }] } })
    const run = await runJobChild(createEnvelope(job, [createProvider(server, "openai-completions")]), { entry })
    expect(run.events.at(-1)).toMatchObject({ type: "job.completed", summary: "fixed" })
    expect(server.requests[2]?.rawBody).toContain("out.json at /n: must be integer (schemas/out.json)")
    expect(run.code).toBe(0)
  } finally {
    await server.stop()
    dirs.cleanup()
  }
})

test("the OpenAI, Anthropic and Google SDKs and QuickJS are bundles of their own beside the child's, required by a relative path only when a job needs them", async () => {
  expect(entry).not.toBe("")
  const dir = join(entry, "..")
  const main = readFileSync(entry, "utf8")
  const inputs = bundleInputs(dir)
  for (const [pkg, sub] of SPLIT_SDKS) {
    const sdk = join(dir, "sdk", sub, "index.js")
    expect(existsSync(sdk)).toBe(true)
    expect(existsSync(`${sdk}.jsc`)).toBe(true)
    // Required (or imported) relative to the bundle (it still works when its directory moves), never bundled in.
    expect(main).toMatch(new RegExp(`(require|import)\\("\\./sdk/${sub}/index\\.js"\\)`))
    expect(inputs.filter((f) => f.includes(`node_modules/${pkg}/`))).toEqual([])
  }
  // Our modules that import only such packages: the MCP SDK (zod, ajv behind it) and ajv's engines.
  for (const [, name] of LAZY_LEAVES) {
    expect(existsSync(join(dir, "lazy", name, `${name}.js.jsc`))).toBe(true)
    expect(main).toMatch(new RegExp(`(require|import)\\("\\./lazy/${name}/${name}\\.js"\\)`))
  }
  for (const pkg of ["@modelcontextprotocol/sdk", "zod", "ajv", "quickjs-emscripten-core", "re2js"])
    expect(inputs.filter((f) => f.includes(`node_modules/${pkg}/`))).toEqual([])
  // The list is the bundle's: our kernel and Effect are in it.
  for (const file of ["src/jobChild/entry.ts", "src/kernel/Kernel.ts", "node_modules/effect/"])
    expect(inputs.some((f) => f.includes(file))).toBe(true)
  // A moved bundle directory still finds its SDKs: the Anthropic job runs from a copy elsewhere.
  const moved = mkdtempSync(join(tmpdir(), "kintsugi-bundle-moved-"))
  const server = await startAnthropicServer([{ kind: "turn", text: "done" }])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  try {
    cpSync(dir, moved, { recursive: true })
    const run = await runJobChild(createEnvelope(createJob(dirs), [createProvider(server, "anthropic-messages")]), {
      entry: join(moved, "entry.js")
    })
    expect(run.events.at(-1)?.type).toBe("job.completed")
    expect(run.code).toBe(0)
  } finally {
    await server.stop()
    dirs.cleanup()
    rmSync(moved, { recursive: true, force: true })
  }
})

test("the bundles are minified without renaming: the SDKs' classes keep their names (the OpenAI client names itself after its class)", () => {
  expect(entry).not.toBe("")
  const sdk = require(join(entry, "..", "sdk", "openai", "index.js")) as {
    readonly default: new (options: { readonly apiKey: string }) => { getUserAgent: () => string }
  }
  const client = new sdk.default({ apiKey: "sk-test" })
  expect(client.constructor.name).toBe("OpenAI")
  expect(client.getUserAgent()).toMatch(/^OpenAI\/JS \d/)
  // Minified all the same: no module comments, a few long lines (37,077 lines before).
  const text = readFileSync(entry, "utf8")
  expect(/^\/\/ (src|node_modules)\//m.test(text)).toBe(false)
  expect(text.split("\n").length).toBeLessThan(5000)
})

test("pi-ai's catalog of built-in providers lies beside the bundle as JSON, and a built-in provider's model resolves from it", async () => {
  expect(entry).not.toBe("")
  const dir = join(entry, "..")
  expect(existsSync(join(dir, "pi-ai-data", "anthropic.json"))).toBe(true)
  expect(bundleInputs(dir).filter((f) => f.includes("/pi-ai/dist/providers/data/"))).toEqual([])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  try {
    // Refused for its workspace (outDir inside a read-only root), so no request is made: the model
    // is named among the problems only when the catalog has no such model.
    const refusedFor = async (model: string) => {
      const job = {
        ...createJob(dirs, { model: { provider: "b", id: model } }),
        workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.src }
      }
      const run = await runJobChild(createEnvelope(job, [{ id: "b", builtin: "anthropic", apiKey: "" }]), { entry })
      expect(run.code).toBe(2)
      return run.stdout
    }
    const known = JSON.parse(readFileSync(join(dir, "pi-ai-data", "anthropic.json"), "utf8")) as Record<
      string,
      Record<string, { readonly id: string }>
    >
    const model = Object.values(known["anthropic-messages"] ?? {})[0]?.id ?? ""
    expect(model).not.toBe("")
    expect(await refusedFor(model)).not.toContain("job.model")
    expect(await refusedFor("no-such-model")).toContain('no model \\"no-such-model\\"')
  } finally {
    dirs.cleanup()
  }
})

test("the bundle never reads process.stdout (Bun would build a stream and load Node's streams at the child's start); a changed Effect logger fails the build", () => {
  expect(entry).not.toBe("")
  expect(readFileSync(entry, "utf8")).not.toContain("process.stdout")
  const logger = readFileSync(join(import.meta.dir, "..", "..", "node_modules", "effect", "dist", "esm", "internal", "logger.js"), "utf8")
  expect(withoutStdoutReads(logger)).not.toContain("process.stdout")
  expect(() => withoutStdoutReads(logger.replace("process.stdout.isTTY", "process.stdout.hasColors()"))).toThrow(
    "effect's internal/logger.js changed"
  )
})

test("the modules bundled apart (LAZY_LEAVES) import packages only: nothing of ours is ever instantiated twice", () => {
  for (const [file] of LAZY_LEAVES) {
    const specifiers = [
      ...readFileSync(join(import.meta.dir, "..", "..", file), "utf8").matchAll(
        /\bfrom\s+["']([^"']+)["']|\b(?:import|require)\(\s*["']([^"']+)["']\s*\)/g
      )
    ].map((m) => m[1] ?? m[2] ?? "")
    expect(specifiers.length).toBeGreaterThan(0)
    expect(specifiers.filter((s) => s.startsWith(".") || s.startsWith("/"))).toEqual([])
  }
})
