/**
 * The embedded database on a full disk (a small tmpfs, filled): /readyz says "disk full", a write
 * fails with StoreUnavailable naming the full disk; once space returns the same process is ready again
 * and writes succeed, with no restart of the server. Needs root (mount); skipped with the reason otherwise.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Cause, Effect, Exit, Option } from "effect"
import { randomBytes } from "node:crypto"
import { cpSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { templateDataDir } from "../support/db.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"
import { mountTmpfs, tmpfsUnavailable } from "../support/tmpfs.ts"
import { until } from "../support/waitFor.ts"
import { useCleanups } from "../support/deployment.ts"

setDefaultTimeout(180_000)

/** The embedded database's case: with DATABASE_URL set the app's database is that server, not the tmpfs. */
const unavailable = (process.env["DATABASE_URL"] ?? "") !== "" ? "the embedded database's case (DATABASE_URL is set)" : tmpfsUnavailable()

const cleanups = useCleanups(60_000)

const job = (root: string, task: string) => ({
  agent: "codebase-inventory",
  task,
  workspace: { root, readOnly: [join(root, "src")], outDir: join(root, "out") },
  limits: { timeoutSec: 60 }
})

test.skipIf(unavailable !== undefined)(
  `a full disk under the embedded database: /readyz and the failed write say "disk full", and the same process recovers when space returns${unavailable === undefined ? "" : ` (skipped: ${unavailable})`}`,
  async () => {
    const mount = mountTmpfs("kintsugi-diskfull-", 96, cleanups)
    cpSync(await templateDataDir(), join(mount, "data"), { recursive: true })
    process.env["KINTSUGI_DATA_DIR"] = mount
    cleanups.push(() => void delete process.env["KINTSUGI_DATA_DIR"])
    const app: TestApp = await makeTestApp({ db: makeDbLayer({ dataDir: join(mount, "data") }) })
    cleanups.push(() => app.dispose())
    const readyz = async () => {
      const r = await app.app.handle(new Request("http://localhost/readyz"))
      return { status: r.status, body: (await r.json()) as { status: string; detail?: string } }
    }
    const enqueue = (task = "disk full") => app.runtime.runPromiseExit(Effect.flatMap(JobStore, (s) => s.enqueue(job(mount, task), "ops")))
    expect((await readyz()).status).toBe(200)
    expect((await enqueue())._tag).toBe("Success")

    // Fill the file system to the last block.
    const filler = join(mount, "filler")
    const s = statfsSync(mount)
    try {
      writeFileSync(filler, Buffer.alloc(s.bavail * s.bsize))
    } catch {
      // ENOSPC at the very end: full either way
    }
    const full = await readyz()
    expect(full).toMatchObject({ status: 503, body: { status: "unavailable" } })
    expect(full.body.detail).toStartWith("disk full")
    // Writes fail now (once what the database's files had room for is used up: 1 MB of incompressible
    // task at a time), and the failure is named in the log.
    let failure: string | undefined
    for (let i = 0; i < 120 && failure === undefined; i++) {
      const exit = await enqueue(randomBytes(512 * 1024).toString("hex"))
      if (Exit.isFailure(exit)) failure = Option.getOrUndefined(Cause.failureOption(exit.cause))?.message ?? Cause.pretty(exit.cause)
    }
    // StoreUnavailable names it: the message the API answers with (503) and logs as the request's failure.
    expect(failure).toStartWith("disk full: the database did not complete JobStore.enqueue")

    // Space returns: the same process is ready and writes again.
    rmSync(filler)
    await until(async () => (await readyz()).status === 200, { what: "/readyz to be ready again", timeoutMs: 90_000, everyMs: 250 })
    await until(async () => (await enqueue())._tag === "Success", { what: "a write to succeed again", timeoutMs: 90_000, everyMs: 500 })
  }
)
