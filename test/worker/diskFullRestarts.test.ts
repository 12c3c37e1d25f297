/**
 * The embedded database's restarts on a full disk, on the TestClock: a worker that exits is replaced at
 * once; restarts that fail (the data dir's disk is full) are tried again 1 s, 2 s, 4 s … at most 30 s
 * apart, each logged with "disk full"; once space returns the restart succeeds in the same process, a
 * worker that stops before it was healthy waits out the backoff, and after a healthy period a restart
 * is at once again. Needs root (mount); skipped with the reason otherwise.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Duration, Effect, Logger, TestClock, TestContext } from "effect"
import { cpSync, renameSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { startEmbedded } from "../../src/db/embeddedDatabase.ts"
import { newWorker } from "../../src/db/embeddedWorkerAhead.ts"
import { templateDataDir } from "../support/db.ts"
import { useCleanups } from "../support/deployment.ts"
import { mountTmpfs, tmpfsUnavailable } from "../support/tmpfs.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(300_000)

const unavailable = tmpfsUnavailable()

const cleanups = useCleanups(60_000)

/** Waits (outside the TestClock) for `condition`, re-checked every 20 ms. */
const waitFor = (what: string, condition: () => boolean) => Effect.promise(() => until(condition, { what, timeoutMs: 30_000, everyMs: 20 }))

/** Lets the watchdog's fiber run what the clock's move woke. */
const settle = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

test.skipIf(unavailable !== undefined)(
  `the embedded database's restarts back off 1 s, 2 s, 4 s … 30 s while its disk is full, recover when space returns, and are at once again after a healthy period${unavailable === undefined ? "" : ` (skipped: ${unavailable})`}`,
  async () => {
    const mount = mountTmpfs("kintsugi-diskfull-restarts-", 160, cleanups)
    const dataDir = join(mount, "data")
    cpSync(await templateDataDir(), dataDir, { recursive: true })
    // PGlite reopens a data dir it has run on without new space, but cannot open one for the first time on a
    // full disk: the restarts below find an unopened copy in the data dir's place.
    const unopened = join(mount, "unopened")
    cpSync(await templateDataDir(), unopened, { recursive: true })
    const filler = join(mount, "filler")

    const workers: Array<Worker> = []
    const logs: Array<string> = []
    const logger = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => void logs.push(Array.isArray(message) ? message.join(" ") : String(message)))
    )
    /** Log lines since `from` that contain `text`. */
    const logged = (from: number, text: string) => logs.slice(from).filter((l) => l.includes(text))

    const program = Effect.gen(function* () {
      const db = yield* startEmbedded(
        {
          dataDir,
          maxConnections: 2,
          // Long: the clock moves in large steps here, and no statement is stuck.
          statementTimeout: Duration.hours(1),
          newWorker: () => {
            const worker = newWorker()
            workers.push(worker)
            return worker
          }
        },
        () => Effect.void
      )
      const answers = () =>
        Effect.promise(async () => {
          const client = new pg.Client({ stream: db.socket, host: db.socketDir, user: "postgres", database: "postgres" })
          await client.connect()
          try {
            return (await client.query<{ one: number }>("SELECT 1 AS one")).rows[0]?.one
          } finally {
            await client.end()
          }
        })
      expect(yield* answers()).toBe(1)
      expect(workers.length).toBe(1)

      // The disk fills; then the worker exits: it is replaced at once, and that restart fails.
      const s = statfsSync(mount)
      try {
        writeFileSync(filler, Buffer.alloc(s.bavail * s.bsize))
      } catch {
        // ENOSPC at the very end: full either way
      }
      renameSync(dataDir, join(mount, "opened"))
      renameSync(unopened, dataDir)
      let from = logs.length
      workers.at(-1)?.terminate()
      yield* waitFor("the first restart to fail", () => logged(from, "cannot restart the embedded database").length === 1)
      expect(workers.length).toBe(2)

      // Each failed restart waits twice as long as the last before the next, up to 30 s.
      for (const seconds of [1, 2, 4, 8, 16, 30, 30]) {
        const failure = logged(from, "cannot restart the embedded database").at(-1) ?? ""
        expect(failure).toStartWith("disk full: ")
        expect(failure).toEndWith(`trying again in ${seconds} s`)
        const attempts = workers.length
        yield* TestClock.adjust(Duration.millis(seconds * 1000 - 500))
        yield* settle
        expect(workers.length).toBe(attempts)
        from = logs.length
        yield* TestClock.adjust(Duration.millis(500))
        yield* settle
        expect(workers.length).toBe(attempts + 1)
        yield* waitFor(`the restart after ${seconds} s to fail`, () => logged(from, "cannot restart the embedded database").length === 1)
      }
      expect(db.restarts()).toBe(0)

      // Space returns: the next restart (after 30 s) succeeds, in the same process.
      rmSync(filler)
      yield* TestClock.adjust(Duration.seconds(30))
      yield* waitFor("the restart once space returned", () => db.restarts() === 1)
      expect(yield* answers()).toBe(1)

      // A worker that stops before it was healthy waits out the backoff (30 s after the last restart).
      from = logs.length
      let attempts = workers.length
      workers.at(-1)?.terminate()
      yield* waitFor("the replacement to be put off", () => logged(from, "restarting it in 30 s").length === 1)
      yield* TestClock.adjust(Duration.seconds(29.5))
      yield* settle
      expect(workers.length).toBe(attempts)
      yield* TestClock.adjust(Duration.millis(500))
      yield* settle
      expect(workers.length).toBe(attempts + 1)
      yield* waitFor("the put-off restart", () => db.restarts() === 2)

      // A minute of answering ends the run of restarts: the next is at once, the one after it 1 s later.
      yield* TestClock.adjust(Duration.minutes(1))
      attempts = workers.length
      workers.at(-1)?.terminate()
      yield* waitFor("an immediate restart after a healthy period", () => db.restarts() === 3)
      expect(workers.length).toBe(attempts + 1)
      from = logs.length
      workers.at(-1)?.terminate()
      yield* waitFor("the next replacement to be put off", () => logged(from, "restarting it in 1 s").length === 1)
      yield* TestClock.adjust(Duration.millis(500))
      yield* settle
      expect(workers.length).toBe(attempts + 1)
      yield* TestClock.adjust(Duration.millis(500))
      yield* waitFor("the restart 1 s later", () => db.restarts() === 4)
      expect(yield* answers()).toBe(1)
    })
    await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(logger), Effect.provide(TestContext.TestContext)))
  }
)
