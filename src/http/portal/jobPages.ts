/**
 * Jobs in the portal: the list, an agent's run form (the same checks — JobInput schema, job roots —
 * and guard as POST /api/jobs, then enqueue and wake the workers), one job's live page, abort.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { AgentStore } from "../../agents/AgentStore.ts"
import { JobBus } from "../../worker/JobBus.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { IDEMPOTENCY_KEY, JobStore } from "../../worker/JobStore.ts"
import { jobPage, jobsPage, runPage, blankRun, type RunValues } from "../../../views/pages/jobs.ts"
import { htmlResponse, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const field = (f: PortalInput["form"], name: string): string => {
  const v = f.get(name)
  return typeof v === "string" ? v.trim() : ""
}

export const runValuesFrom = (f: PortalInput["form"]): RunValues => ({
  task: field(f, "task"),
  root: field(f, "root"),
  readOnly: field(f, "readOnly"),
  outDir: field(f, "outDir"),
  timeoutSec: field(f, "timeoutSec"),
  maxCostUsd: field(f, "maxCostUsd"),
  project: field(f, "project"),
  idempotencyKey: field(f, "idempotencyKey")
})

/** The run form as the API's job body (JobInput decides what is valid). */
export const jobBodyOf = (agent: string, v: RunValues): Record<string, unknown> => ({
  agent,
  task: v.task,
  ...(v.project === "" ? {} : { project: v.project }),
  workspace: { root: v.root, readOnly: v.readOnly.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== ""), outDir: v.outDir },
  limits: { timeoutSec: v.timeoutSec === "" ? Number.NaN : Number(v.timeoutSec), ...(v.maxCostUsd === "" ? {} : { maxCostUsd: Number(v.maxCostUsd) }) }
})

const jobId = (i: PortalInput) => i.params["id"] ?? ""

export const jobPages = (portal: PortalRunner) =>
  new Elysia()
    .get("/jobs", portal.page("read", ({ page }) => Effect.map(Effect.flatMap(JobStore, (s) => s.list({ limit: 100 })), (jobs) => htmlResponse(jobsPage(page, jobs)))))
    .get(
      "/jobs/:id",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.get(jobId(input))
          const events = yield* store.events(job.id, -1)
          return htmlResponse(jobPage(input.page, job, events, input.principal.permissions.has("agents.manage")))
        })
      )
    )
    .post(
      "/jobs/:id/abort",
      portal.action("agents.manage", (input) =>
        Effect.map(Effect.flatMap(JobStore, (s) => s.requestAbort(jobId(input))), (job) => redirect(input.request, `/jobs/${job.id}`))
      )
    )
    .get(
      "/agents/:name/run",
      portal.page("agents.manage", (input) =>
        Effect.map(Effect.flatMap(AgentStore, (s) => s.get(input.params["name"] ?? "")), (agent) => htmlResponse(runPage(input.page, agent.name, blankRun(), [])))
      )
    )
    .post(
      "/agents/:name/run",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(input.params["name"] ?? "")
          const values = runValuesFrom(input.form)
          const decoded = yield* (yield* JobRoots).decodeJob(jobBodyOf(agent.name, values))
          if (Either.isLeft(decoded)) return htmlResponse(runPage(input.page, agent.name, values, decoded.left), 400)
          const store = yield* JobStore
          const by = input.principal.username
          // The form's key makes a double click (or a resubmit) land on the job it already started.
          const outcome = IDEMPOTENCY_KEY.test(values.idempotencyKey)
            ? yield* Effect.either(store.enqueueOnce(decoded.right, by, values.idempotencyKey))
            : Either.right({ job: yield* store.enqueue(decoded.right, by), created: true })
          if (Either.isLeft(outcome)) {
            const problem = { path: "general", message: "This form already started a job with other values. Check the values and start again to run a new job." }
            return htmlResponse(runPage(input.page, agent.name, { ...values, idempotencyKey: blankRun().idempotencyKey }, [problem]), 409)
          }
          if (outcome.right.created) yield* (yield* JobBus).publish({ _tag: "Queued" })
          return redirect(input.request, `/jobs/${outcome.right.job.id}`)
        })
      )
    )
