/**
 * Eval runs are held under the job lease (KINTSUGI_JOB_LEASE): a run whose server was killed outright
 * stops renewing it and is ended as `error` by the sweep once it has run out, as a job is settled
 * "worker lost"; a run whose lease is current is left running.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { EvalRun } from "../../src/agents/evalRepo.ts"
import { Evals } from "../../src/worker/evals/Evals.ts"
import { useApp } from "../support/appHarness.ts"

setDefaultTimeout(120_000)

const h = useApp({ workers: 0 })

/** A running run as its executor left it: last renewed `renewedSecondsAgo`, its lease ending `leaseEndsIn` from now. */
const createRunningRun = (renewedSecondsAgo: number, leaseEndsIn: number) =>
  h.rt.runPromise(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{
          id: string
        }>`INSERT INTO admin.agent_eval_run (agent_name, version, project_id, status, started_by, started_at, heartbeat_at, lease_expires_at)
          VALUES ('lease-bot', 1, 'kintsugi-evals', 'running', 'test', now() - interval '1 minute',
            now() - make_interval(secs => ${renewedSecondsAgo}), now() + make_interval(secs => ${leaseEndsIn}))
          RETURNING id`,
        (rows) => rows[0]!.id
      )
    )
  )

const runOf = async (id: string): Promise<EvalRun> => (await h.api("GET", `/api/admin/eval-runs/${id}`)).json<{ run: EvalRun }>().run

test("a run whose lease ran out (renewed 20 s ago, a 15 s lease) is ended by the sweep; one with a current lease keeps running", async () => {
  const killed = await createRunningRun(20, -5)
  const alive = await createRunningRun(5, 10)
  await h.rt.runPromise(Effect.flatMap(Evals, (e) => e.kick))
  expect(await runOf(killed)).toMatchObject({
    status: "error",
    message: "the server running it stopped before it finished (its lease ran out); start a new run"
  })
  expect((await runOf(killed)).finishedAt).not.toBeNull()
  expect((await runOf(alive)).status).toBe("running")
  await h.rt.runPromise(Effect.flatMap(SqlClient, (sql) => sql`DELETE FROM admin.agent_eval_run WHERE id IN (${killed}, ${alive})`))
})
