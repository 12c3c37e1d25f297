/**
 * The database never wedges: a 5,000-deep jsonb value followed by a failing statement, and
 * a statement that runs past the statement timeout, both leave the database answering — on the Db
 * layer itself and through the HTTP API.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { type Duration, Effect, Either, ManagedRuntime } from "effect"
import { useApp } from "../support/appHarness.ts"
import { testDbLayer, usingServer } from "../support/db.ts"
import { within as bounded } from "../support/waitFor.ts"

setDefaultTimeout(180_000)

/**
 * The liveness bound: a bound on a hang, not a speed measurement. An answer may wait for the embedded
 * database's restart after PGlite failed inside a statement, seconds on a loaded machine.
 */
const LIVENESS_MS = 30_000
const within = <A>(what: string, p: Promise<A>): Promise<A> =>
  bounded(p, { what: `${what} (is the database wedged?)`, timeoutMs: LIVENESS_MS })

const deepJson = (depth: number): string => `${'{"a":'.repeat(depth)}"x"${"}".repeat(depth)}`
const deepObject = (depth: number): Record<string, unknown> => JSON.parse(deepJson(depth)) as Record<string, unknown>

describe("the Db layer", () => {
  const withDb = async (
    statementTimeout: Duration.DurationInput,
    body: (run: <A, E>(e: Effect.Effect<A, E, SqlClient>) => Promise<A>) => Promise<void>
  ) => {
    const rt = ManagedRuntime.make(testDbLayer({ statementTimeout }))
    try {
      await rt.runtime()
      await body((e) => rt.runPromise(e))
    } finally {
      await rt.dispose()
    }
  }

  test("a 5,000-deep jsonb value, then a NUL parameter: SELECT 1 still answers, committed rows are kept", async () => {
    await withDb("30 seconds", async (run) => {
      await run(Effect.flatMap(SqlClient, (sql) => sql`CREATE TABLE runtime.wedge_probe (v jsonb NOT NULL)`))
      await run(Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO runtime.wedge_probe VALUES (${JSON.stringify({ kept: true })}::jsonb)`))
      // Stored or refused, either is fine; what follows must not hang.
      const deep = await within(
        "the deep insert",
        run(Effect.either(Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO runtime.wedge_probe VALUES (${deepJson(5000)}::jsonb)`)))
      )
      const nul = await within(
        "the NUL query",
        run(Effect.either(Effect.flatMap(SqlClient, (sql) => sql`SELECT ${"a\u0000b"}::text AS x`)))
      )
      expect(Either.isLeft(nul)).toBe(true)
      expect(await within("SELECT 1", run(Effect.flatMap(SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`)))).toEqual([{ one: 1 }])
      const rows = await within(
        "the probe",
        run(
          Effect.flatMap(
            SqlClient,
            (sql) => sql<{ kept: boolean | null }>`SELECT (v->>'kept')::boolean AS kept FROM runtime.wedge_probe ORDER BY kept`
          )
        )
      )
      // The deep row is there only when its insert said so (never a silent half-insert).
      expect(rows.filter((r) => r.kept === true).length).toBe(1)
      expect(rows.length).toBe(Either.isRight(deep) ? 2 : 1)
    })
  })

  test("a statement past the statement timeout is stopped and the database answers again", async () => {
    await withDb("1 second", async (run) => {
      const slow = await within(
        "the slow statement",
        run(Effect.either(Effect.flatMap(SqlClient, (sql) => sql`SELECT count(*) FROM generate_series(1, 2000000000)`)))
      ).catch((e: unknown) => e)
      // The statement ends (an error) within the bound, rather than running to its end.
      expect(Either.isEither(slow) && Either.isLeft(slow)).toBe(true)
      expect(await within("SELECT 1", run(Effect.flatMap(SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`)))).toEqual([{ one: 1 }])
    })
  })
})

describe(`deep metadata then a NUL sign-in over HTTP (${usingServer() ? "PostgreSQL server" : "embedded database"})`, () => {
  const h = useApp()

  test("a job with 5,000-deep metadata, then a sign-in with a NUL: /healthz and GET /api/jobs answer", async () => {
    const job = await within(
      "POST /api/jobs",
      h.api("POST", "/api/jobs", {
        agent: "data-interfaces",
        task: "t",
        workspace: { root: "/tmp", readOnly: ["/tmp"], outDir: "/tmp" },
        limits: { timeoutSec: 60 },
        metadata: deepObject(5000)
      })
    )
    // Refused at the HTTP edge (400), by the embedded database, or stored by a server: any answer will do.
    expect(job.status).toBeGreaterThanOrEqual(200)
    const signIn = await within(
      "POST /api/session",
      h.app.handle(
        new Request("http://localhost/api/session", {
          method: "POST",
          headers: { "content-type": "application/json", origin: "http://localhost" },
          body: JSON.stringify({ username: "ad\u0000min", password: "a long test password" })
        })
      )
    )
    expect(signIn.status).not.toBe(200)
    const health = await within("/healthz", h.app.handle(new Request("http://localhost/healthz")))
    expect(health.status).toBe(200)
    const jobs = await within("GET /api/jobs", h.api("GET", "/api/jobs"))
    expect(jobs.status).toBe(200)
    // And again: the database did not just survive one more request.
    expect((await within("GET /api/jobs (again)", h.api("GET", "/api/jobs"))).status).toBe(200)
  })
})
