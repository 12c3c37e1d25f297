/**
 * The job page's output view reads a running job's file from its outDir: what is served is judged by the
 * opened descriptor, so a directory the job's shell swaps for a link out of outDir is never read through,
 * and a file replaced while it is read is opened again rather than answered with 404.
 */
import { afterEach, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { readOutput } from "../../src/http/portal/jobOutput.ts"
import { replacedFile, swappedDirectory, tally } from "../support/fileChurn.ts"

const stops: Array<() => void> = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
})

test("a directory swapped for a link out of outDir and back: the view never serves the file outside", async () => {
  const churn = await swappedDirectory()
  stops.push(churn.stop)
  const served = await tally(() =>
    Effect.runPromise(Effect.either(readOutput({ outDir: churn.outDir }, "sub/report.md", ["sub/report.md"]))).then((read) =>
      Either.isRight(read) ? new TextDecoder().decode(read.right) : read.left._tag
    )
  )
  expect(await churn.steps).toBeGreaterThan(300)
  expect(served["inside"]).toBeGreaterThan(0)
  expect(served["SECRET"]).toBeUndefined()
})

test("a file replaced over and over by another process (temp file and rename): every view serves its text", async () => {
  const churn = await replacedFile()
  stops.push(churn.stop)
  const served = await tally(() =>
    Effect.runPromise(Effect.either(readOutput({ outDir: churn.dir }, "report.md", ["report.md"]))).then((read) =>
      Either.isRight(read) ? new TextDecoder().decode(read.right) : read.left._tag
    )
  )
  expect(await churn.steps).toBeGreaterThan(300)
  expect(Object.keys(served)).toEqual(["hello"])
})

test("links: one to a file inside outDir is served; one out of it, or a hard link to a host file, is 404", async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-view-links-")))
  stops.push(() => rmSync(base, { recursive: true, force: true }))
  const outDir = join(base, "out")
  mkdirSync(outDir)
  writeFileSync(join(base, "host.txt"), "SECRET")
  writeFileSync(join(outDir, "report.md"), "inside")
  symlinkSync(join(outDir, "report.md"), join(outDir, "alias.md"))
  symlinkSync(join(base, "host.txt"), join(outDir, "out-link.md"))
  linkSync(join(base, "host.txt"), join(outDir, "hard.md"))
  const view = (path: string) =>
    Effect.runPromise(Effect.either(readOutput({ outDir }, path, [path]))).then((r) =>
      Either.isRight(r) ? new TextDecoder().decode(r.right) : r.left._tag
    )
  expect(await Promise.all(["report.md", "alias.md", "out-link.md", "hard.md"].map(view))).toEqual([
    "inside",
    "inside",
    "NotFound",
    "NotFound"
  ])
})
