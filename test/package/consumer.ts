/**
 * A project that uses the kernel as its users do, from outside the repository (`.ci/consumer.sh` runs
 * it in CI): packs the repository (`bun pm pack`), installs the tarball into a new project, type-checks
 * the project with `tsc` and runs every code block of docs/kernel.md and docs/testing.md marked
 * ```` ```ts file=<name> ```` (or `json`) as extracted, each against a scripted model. Prints the
 * tarball's size and file count, the install's size, each check as `ok`/`FAIL`, and last
 * `consumer: N passed, N failed` (exit 1 when any failed).
 *
 * Checks: the install holds no package of the server workspace and stays under INSTALL_LIMIT_BYTES;
 * `tsc` is clean; each doc example passes. Settings: KINTSUGI_CONSUMER_KEEP=1 keeps the project.
 * The npm registry is reached as Bun reaches it here (NODE_EXTRA_CA_CERTS and the proxy variables pass
 * through).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { ROOT } from "../architecture/importGraph.ts"

/** A kernel-only consumer's node_modules must stay below this (bytes, as `du -sb` counts them). */
const INSTALL_LIMIT_BYTES = 150_000_000
/** The docs whose marked blocks are extracted and run. */
const DOCS = ["docs/kernel.md", "docs/testing.md"]

interface Manifest {
  readonly devDependencies?: Record<string, string>
  readonly dependencies?: Record<string, string>
}
const own: Manifest = await Bun.file(join(ROOT, "package.json")).json()
const server: Manifest = await Bun.file(join(ROOT, "server", "package.json")).json()

let passed = 0
let failed = 0
const check = (ok: boolean, what: string, detail = ""): boolean => {
  if (ok) passed++
  else failed++
  // The detail (a command's output, what was found) is shown for a failure only.
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${ok || detail === "" ? "" : `\n${detail}`}`)
  return ok
}
const mb = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`

interface Ran {
  readonly exitCode: number
  readonly output: string
}
/** Runs a command to its end, stdout and stderr together. */
const run = async (cmd: ReadonlyArray<string>, cwd: string, env: Record<string, string | undefined> = process.env): Promise<Ran> => {
  const proc = Bun.spawn([...cmd], { cwd, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" })
  const [out, err, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { exitCode, output: `${out}${err}` }
}
const tail = (text: string, lines = 40) => text.trimEnd().split("\n").slice(-lines).join("\n")

/** `du -sb`: the bytes of a tree (each hard-linked file once). */
const diskUsage = async (path: string): Promise<number> => {
  const du = await run(["du", "-sb", path], ROOT)
  return Number.parseInt(du.output.split(/\s/)[0] ?? "", 10)
}

/** A doc's code blocks marked with a file name: ```` ```ts file=example.ts ````. */
const markedBlocks = async (doc: string): Promise<Array<{ readonly file: string; readonly code: string }>> => {
  const text = await Bun.file(join(ROOT, doc)).text()
  return [...text.matchAll(/^```(?:ts|json) file=([\w.-]+)\n([\s\S]*?)^```$/gm)].map((m) => ({ file: m[1]!, code: m[2]! }))
}

const work = mkdtempSync(join(tmpdir(), "kintsugi-consumer-"))
const project = join(work, "project")
mkdirSync(project)
try {
  // 1. The tarball.
  const packed = await run(["bun", "pm", "pack", "--destination", work, "--quiet"], ROOT)
  const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"))
  if (!check(packed.exitCode === 0 && tarball !== undefined, "bun pm pack", tail(packed.output))) throw new Error("no tarball")
  const tarPath = join(work, tarball!)
  const listed = await run(["tar", "-tzf", tarPath], ROOT)
  const files = listed.output.split("\n").filter((l) => l !== "" && !l.endsWith("/")).length
  console.log(`tarball: ${basename(tarPath)}, ${mb(statSync(tarPath).size)} (${statSync(tarPath).size} bytes), ${files} files`)

  // 2. A new project installs it: the kernel's dependencies and nothing of the server's.
  writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "kintsugi-consumer", private: true, type: "module" }, null, 2)}\n`)
  const added = await run(["bun", "add", tarPath], project)
  if (!check(added.exitCode === 0, `bun add ${basename(tarPath)}`, tail(added.output))) throw new Error("install failed")
  const installed = await diskUsage(join(project, "node_modules"))
  console.log(`install size (kintsugi-runtime and its dependencies): ${mb(installed)} (${installed} bytes, du -sb node_modules)`)
  check(installed < INSTALL_LIMIT_BYTES, `the install is under ${mb(INSTALL_LIMIT_BYTES)}`)
  const serverPackages = Object.keys(server.dependencies ?? {}).filter((pkg) => {
    try {
      return statSync(join(project, "node_modules", pkg)).isDirectory()
    } catch {
      return false
    }
  })
  check(serverPackages.length === 0, "no package of the server workspace is installed", serverPackages.join(", "))

  // 3. The docs' blocks, as written, and the consumer's type checker (the repository's versions).
  const blocks = (await Promise.all(DOCS.map(async (doc) => (await markedBlocks(doc)).map((b) => ({ ...b, doc }))))).flat()
  for (const block of blocks) writeFileSync(join(project, block.file), block.code)
  check(
    blocks.some((b) => b.file === "tsconfig.json"),
    "the docs give the consumer's tsconfig.json"
  )
  const tools = ["typescript", "@types/bun"].map((pkg) => `${pkg}@${own.devDependencies?.[pkg] ?? "latest"}`)
  const dev = await run(["bun", "add", "-d", ...tools], project)
  check(dev.exitCode === 0, `bun add -d ${tools.join(" ")}`, tail(dev.output))
  console.log(`install size with typescript and @types/bun: ${mb(await diskUsage(join(project, "node_modules")))}`)
  const tsc = await run([join(project, "node_modules", ".bin", "tsc"), "-p", "."], project)
  check(tsc.exitCode === 0, "tsc -p . (strict, default lib with the DOM) is clean", tail(tsc.output))

  // 4. Each example runs: a test file under `bun test`, any other file with `bun`.
  for (const block of blocks.filter((b) => b.file.endsWith(".ts"))) {
    const cmd = block.file.endsWith(".test.ts") ? ["bun", "test", `./${block.file}`] : ["bun", block.file]
    const ran = await run(cmd, project)
    check(ran.exitCode === 0, `${block.doc}: ${block.file} (${cmd.join(" ")}) passes`, tail(ran.output))
  }
  const without = DOCS.filter((doc) => !blocks.some((b) => b.doc === doc && b.file.endsWith(".ts")))
  check(without.length === 0, "each doc holds a runnable example", without.join(", "))
} catch (error) {
  check(false, "the consumer run", error instanceof Error ? error.message : String(error))
} finally {
  if (process.env["KINTSUGI_CONSUMER_KEEP"] === "1") console.log(`kept ${work}`)
  else rmSync(work, { recursive: true, force: true })
}

console.log(`consumer: ${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
