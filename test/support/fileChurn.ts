/**
 * Another process changing files while a test reads them: a file replaced over and over (as the write
 * tool replaces it), or a directory of an outDir swapped for a link out of it and back (as a hostile
 * job's shell could). Each runs 4 s; the helpers resolve once the first change is seen.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { until } from "./waitFor.ts"

export interface Churn {
  /** The count of steps the process made, once it has ended (0 exit), else rejects. */
  readonly steps: Promise<number>
  /** Stops the process and removes what it worked on. */
  readonly stop: () => void
}

/** What `read` gave over 1.5 s of calls one after another, with how often. */
export const tally = async (read: () => Promise<string>): Promise<Record<string, number>> => {
  const seen: Record<string, number> = {}
  const until = Date.now() + 1500
  while (Date.now() < until) {
    const what = await read()
    seen[what] = (seen[what] ?? 0) + 1
  }
  return seen
}

const run = async (script: string, begun: () => boolean, dir: string): Promise<Churn> => {
  const proc = Bun.spawn(
    [
      "bun",
      "-e",
      `const fs = require("fs"); const end = Date.now() + 4000; let i = 0; for (; Date.now() < end; i++) { ${script} } fs.writeSync(1, i + "\\n")`
    ],
    {
      stdout: "pipe",
      stderr: "inherit"
    }
  )
  const stop = () => {
    proc.kill()
    rmSync(dir, { recursive: true, force: true })
  }
  await until(
    () => {
      if (proc.exitCode !== null) throw new Error(`the churn process exited ${proc.exitCode} before it began`)
      return begun()
    },
    { what: "the churn process to begin", events: [proc.exited], everyMs: 1 }
  ).catch((e) => {
    stop()
    throw e
  })
  const steps = (async () => {
    const code = await proc.exited
    if (code !== 0) throw new Error(`the churn process exited ${code}`)
    return Number(await new Response(proc.stdout).text())
  })()
  // In an object: an async function returning the promise itself would wait for the whole churn.
  return { steps, stop }
}

/** `dir/report.md` holding "hello", replaced by another process about every millisecond. */
export const replacedFile = async (): Promise<Churn & { readonly dir: string; readonly file: string }> => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-replaced-")))
  const file = join(dir, "report.md")
  writeFileSync(file, "hello")
  const first = statSync(file).ino
  const churn = await run(
    `const t = ${JSON.stringify(dir)} + "/.t" + i; fs.writeFileSync(t, "hello"); fs.renameSync(t, ${JSON.stringify(file)}); Bun.sleepSync(1)`,
    () => statSync(file, { throwIfNoEntry: false })?.ino !== first,
    dir
  )
  return { ...churn, dir, file }
}

/**
 * `outDir/sub` by renames in turn: the real directory (its report.md says "inside") and a link to a
 * directory outside outDir (its report.md says "SECRET").
 */
export const swappedDirectory = async (): Promise<Churn & { readonly outDir: string; readonly sub: string }> => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-swapped-")))
  const outDir = join(base, "out")
  const outside = join(base, "host")
  const parked = join(outDir, "real")
  for (const d of [parked, outside]) mkdirSync(d, { recursive: true })
  writeFileSync(join(parked, "report.md"), "inside")
  writeFileSync(join(outside, "report.md"), "SECRET")
  const sub = join(outDir, "sub")
  renameSync(parked, sub)
  const link = join(outDir, "link")
  symlinkSync(outside, link)
  const [s, p, l] = [sub, parked, link].map((x) => JSON.stringify(x))
  const churn = await run(
    `fs.renameSync(${s}, ${p}); fs.renameSync(${l}, ${s}); fs.renameSync(${s}, ${l}); fs.renameSync(${p}, ${s})`,
    () => existsSync(parked),
    base
  )
  return { ...churn, outDir, sub }
}
