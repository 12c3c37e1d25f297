/**
 * Jobs in the portal: the list (filters, cursor pages, a rows fragment htmx refreshes), an agent's run
 * form (admitJob: the same checks and guard as POST /api/jobs, then enqueue once per form and wake the
 * workers; the model and thinking level the job will get shown above it), one job's page with its
 * live stream of server-rendered rows (SSE, htmx SSE extension), its output files, abort.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { AgentStore } from "../../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../../agents/resolveAgentDefinition.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { jobModelFor } from "../../providers/jobModelFor.ts"
import type { JobEvent } from "../../contract/JobEvent.ts"
import type { Problem } from "../../contract/Problem.ts"
import { admitJob } from "../../worker/admitJob.ts"
import { committedSha } from "../../worker/commitOutputs.ts"
import { JobBus } from "../../worker/JobBus.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { IDEMPOTENCY_KEY, JobStore, type JobRow, type JobStatus } from "../../worker/JobStore.ts"
import { Projects } from "../../worker/Projects.ts"
import { ContinueBody, continueJob, continuationsOf } from "../../worker/transcripts/continuation.ts"
import { TranscriptStore } from "../../worker/transcripts/TranscriptStore.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { Workspaces } from "../../worker/workspaces/Workspaces.ts"
import { JOB_STATUSES, jobsPage, jobsRows, type JobsListProps, type JobsQuery } from "../../../views/pages/jobs.ts"
import {
  actionsSection,
  type ContinueProps,
  continueSection,
  eventRow,
  factsSection,
  failureSection,
  jobPage,
  liveNote,
  messageDelta,
  openMessage,
  groundingSection,
  outputLinesPage,
  outputPaths,
  answerSection,
  outputsSection,
  statusSection,
  timelineRow,
  traceSection,
  transcriptLoader,
  usageSection
} from "../../../views/pages/jobPage.ts"
import {
  blankRun,
  runPage,
  runSlot,
  runValuesOfJob,
  runValuesOfWorkspace,
  type RunModel,
  type RunPlaces,
  type RunValues
} from "../../../views/pages/runForm.ts"
import { html, type Html } from "../../../views/html.ts"
import { followJob, resumeAfter, sseFrame, sseResponse, SSE_HEARTBEAT_MS } from "../eventStream.ts"
import { badRequest, type ApiError } from "../respond.ts"
import type { AppServices } from "../route.ts"
import { utf8 } from "../textBounds.ts"
import { outputResponse, readOutput, type OutputSource } from "./jobOutput.ts"
import { htmlResponse, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const field = (f: PortalInput["form"], name: string): string => {
  const v = f.get(name)
  return typeof v === "string" ? v.trim() : ""
}

const runValuesFrom = (f: PortalInput["form"]): RunValues => ({
  task: field(f, "task"),
  root: field(f, "root"),
  readOnly: field(f, "readOnly"),
  outDir: field(f, "outDir"),
  timeoutSec: field(f, "timeoutSec"),
  maxCostUsd: field(f, "maxCostUsd"),
  project: field(f, "project"),
  idempotencyKey: field(f, "idempotencyKey")
})

/** The run form as the API's job body (admitJob decides what is valid). */
const jobBodyOf = (agent: string, v: RunValues): Record<string, unknown> => ({
  agent,
  task: v.task,
  ...(v.project === "" ? {} : { project: v.project }),
  workspace: {
    root: v.root,
    readOnly: v.readOnly
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== ""),
    outDir: v.outDir
  },
  limits: {
    timeoutSec: v.timeoutSec === "" ? Number.NaN : Number(v.timeoutSec),
    ...(v.maxCostUsd === "" ? {} : { maxCostUsd: Number(v.maxCostUsd) })
  }
})

const jobId = (i: PortalInput) => i.params["id"] ?? ""

const FROM: Readonly<Record<string, string>> = { binding: "from the binding", agent: "the agent's default", default: "none set" }

/** The model and thinking level a job gets, per binding of the agent (jobModelFor: what the worker and kernel choose). */
const runModels = (agent: string): Effect.Effect<ReadonlyArray<RunModel>, never, AppServices> =>
  Effect.gen(function* () {
    const definition = yield* Effect.either(resolveAgentDefinition(agent))
    const agentThinking = Either.isRight(definition) ? definition.right.thinking : undefined
    const projects = (yield* (yield* Bindings).list(agent)).map((b) => b.projectId)
    const models: Array<RunModel> = []
    for (const project of projects) {
      const m = yield* jobModelFor(agent, agentThinking, project)
      if (m.binding === null) continue
      const t = m.thinking
      models.push({
        project,
        model: `${m.binding.providerId}/${m.binding.modelId}`,
        thinking: t?.effective ?? "—",
        thinkingSource:
          m.problem ??
          (t === null
            ? ""
            : t.clamped === "none"
              ? (FROM[t.requestedFrom] ?? "")
              : `${FROM[t.requestedFrom] ?? ""}: ${t.requested}, which this model does not have`)
      })
    }
    return models
  })

/** The job roots and the workspaces in them, `chosen` marked (a workspace's path, or ""). */
const runPlaces = (chosen: string): Effect.Effect<RunPlaces, never, AppServices> =>
  Effect.gen(function* () {
    const jobRoots = (yield* JobRoots).boundary.jobRoots
    return { jobRoots, workspaces: yield* (yield* Workspaces).list, chosen }
  })

const WORKSPACE_SLOTS = new Set(["root", "readOnly", "outDir"])

/** A refusal with problems in the folders also says where folders may be: the server's job roots. */
const withRoots = (problems: ReadonlyArray<Problem>, jobRoots: ReadonlyArray<string>): ReadonlyArray<Problem> =>
  problems.some((p) => WORKSPACE_SLOTS.has(runSlot(p)))
    ? [...problems, { path: "workspace.root", message: `every folder must lie inside a job root of this server: ${jobRoots.join(", ")}` }]
    : problems

const queryOf = (url: URL): JobsQuery => {
  const get = (k: string) => (url.searchParams.get(k) ?? "").trim().slice(0, 200)
  const status = get("status")
  const limit = get("limit")
  return {
    status: (JOB_STATUSES as ReadonlyArray<string>).includes(status) ? status : "",
    agent: get("agent"),
    project: get("project"),
    before: get("before"),
    limit: /^\d{1,3}$/.test(limit) && Number(limit) >= 1 && Number(limit) <= 200 ? limit : ""
  }
}

const PAGE_SIZE = 50

/** `effect` with its failure written to the log (a stream under way has no status left to answer with). */
const logged = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.tapError(effect, (e) => Effect.logError("the job stream could not read the job", e))

const listProps = (input: PortalInput): Effect.Effect<JobsListProps, ApiError, AppServices> =>
  Effect.gen(function* () {
    const query = queryOf(input.url)
    const size = query.limit === "" ? PAGE_SIZE : Number(query.limit)
    const jobs = yield* (yield* JobStore).list({
      limit: size,
      ...(query.status === "" ? {} : { status: query.status as JobStatus }),
      ...(query.agent === "" ? {} : { agent: query.agent }),
      ...(query.project === "" ? {} : { project: query.project }),
      ...(query.before === "" ? {} : { before: query.before })
    })
    const agents = (yield* (yield* AgentStore).catalog).map((a) => a.name)
    const projects = (yield* (yield* Projects).list).map((p) => p.id)
    return {
      jobs,
      query,
      next: jobs.length === size ? (jobs[jobs.length - 1]?.id ?? null) : null,
      agents,
      projects,
      canRun: input.principal.permissions.has("agents.manage")
    }
  })

/** The job page's Continue card: the jobs that continue it, and whether this user may continue it now (finished, with a transcript). */
const continuingOf = (input: PortalInput, job: JobRow) =>
  Effect.gen(function* () {
    const canContinue =
      input.principal.permissions.has("agents.manage") &&
      (job.status === "completed" || job.status === "failed") &&
      (yield* (yield* TranscriptStore).kept(job.id))
    return { canContinue, continuations: yield* continuationsOf(job.id) }
  })

/**
 * The sections of the job page that change when it starts, uses tokens or ends, as out-of-band swaps;
 * at its end also the Continue card and a new transcript panel (loaded again, whole).
 */
const finalSections = (input: PortalInput, job: JobRow, events: ReadonlyArray<JobEvent>, continuing: ContinueProps): Html =>
  html`${statusSection(job, true)}${actionsSection(input.page, job, input.principal.permissions.has("agents.manage"), true)}${failureSection(job, true)}${factsSection(job, true)}${usageSection(job, true)}${answerSection(events, true)}${outputsSection(job, events, true)}${groundingSection(job, events, true)}${traceSection(events, true)}${continueSection(input.page, job, continuing, true)}${transcriptLoader(job, true)}${liveNote(false, true)}`

/** The live job page's stream: each event as the rendered row (`row`, id = seq), the final sections, `job-end`. */
const jobStream = (input: PortalInput, heartbeatMs: number) =>
  Effect.gen(function* () {
    const store = yield* JobStore
    const id = jobId(input)
    const job = yield* store.get(id)
    const after = resumeAfter(input.request, input.url)
    const stored = after < 0 ? [] : yield* store.events(job.id, -1)
    let open = openMessage(stored.filter((e) => e.seq <= after))
    const runtime = yield* Effect.runtime<AppServices>()
    return sseResponse(
      runtime,
      (write) =>
        followJob(job.id, after, {
          awaitRow: true,
          event: (e) =>
            Effect.gen(function* () {
              const row = eventRow(e)
              if (e.type === "message.delta" && open !== null) return write(sseFrame("row", messageDelta(open, e.text).text, e.seq))
              open = e.type === "message.delta" ? e.seq : null
              if (row !== null) {
                // The stream is under way: a row it cannot read leaves the sections as they are (the page reload shows them).
                const current =
                  e.type === "job.started" ? yield* Effect.orElseSucceed(logged(store.get(job.id)), () => undefined) : undefined
                const extra = current === undefined ? html`` : html`${statusSection(current, true)}${factsSection(current, true)}`
                return write(sseFrame("row", html`${timelineRow(row, current?.startedAt ?? job.startedAt)}${extra}`.text, e.seq))
              }
              if (e.type === "usage") write(sseFrame("row", usageSection({ costUsd: e.costUsd, usage: e }, true).text, e.seq))
            }),
          settled: (settledJob) =>
            Effect.gen(function* () {
              const events = yield* store.events(job.id, -1)
              const continuing = yield* continuingOf(input, settledJob)
              write(sseFrame("final", finalSections(input, settledJob, events, continuing).text))
              write(sseFrame("job-end", "end"))
            }).pipe(
              // Without its final frames the stream just ends: EventSource reconnects and resumes after the last id.
              logged,
              Effect.ignore
            )
        }),
      heartbeatMs
    )
  })

const decodeContinue = decodeAll(ContinueBody)

export const jobPages = (portal: PortalRunner, heartbeatMs: number = SSE_HEARTBEAT_MS) =>
  new Elysia()
    .get(
      "/jobs",
      portal.page("read", (input) => Effect.map(listProps(input), (props) => htmlResponse(jobsPage(input.page, props))))
    )
    .get(
      "/jobs/rows",
      portal.page("read", (input) => Effect.map(listProps(input), (props) => htmlResponse(jobsRows(props))))
    )
    .get(
      "/jobs/:id",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.get(jobId(input))
          const events = yield* store.events(job.id, -1)
          const canRun = input.principal.permissions.has("agents.manage")
          return htmlResponse(jobPage(input.page, job, events, canRun, yield* continuingOf(input, job)))
        })
      )
    )
    .get(
      "/jobs/:id/stream",
      portal.page("read", (input) => jobStream(input, heartbeatMs))
    )
    .get(
      "/jobs/:id/output",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const store = yield* JobStore
          const job = yield* store.get(jobId(input))
          const path = input.url.searchParams.get("path") ?? ""
          // Committed outputs are read from the commit: the page shows what was committed, not what the folder holds now.
          const commit = committedSha(job.outputs)
          const source: OutputSource = {
            outDir: job.workspace.outDir,
            ...(commit === undefined
              ? {}
              : { committed: { commit, jobId: job.id, jobRoots: (yield* (yield* JobRoots).boundaryFor(job.projectId)).jobRoots } })
          }
          const bytes = yield* readOutput(source, path, outputPaths(yield* store.events(job.id, -1)))
          // A grounding citation's link: the text as numbered lines, the cited one marked.
          const line = Number(input.url.searchParams.get("line") ?? "")
          const text = Number.isInteger(line) && line >= 1 && input.url.searchParams.get("download") !== "1" ? utf8(bytes) : undefined
          if (text !== undefined) return htmlResponse(outputLinesPage(input.page, job.id, path, text, line))
          return outputResponse(path, bytes, input.url.searchParams.get("download") === "1")
        })
      )
    )
    .post(
      "/jobs/:id/abort",
      portal.action("agents.manage", (input) =>
        Effect.map(
          Effect.flatMap(JobStore, (s) => s.requestAbort(jobId(input), input.principal.username)),
          (job) => redirect(input.request, `/jobs/${job.id}`)
        )
      )
    )
    .post(
      "/jobs/:id/continue",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const task = input.form.get("task")
          const body = decodeContinue({ task: typeof task === "string" ? task : "" })
          if (Either.isLeft(body)) return yield* Effect.fail(badRequest(body.left))
          const job = yield* continueJob(jobId(input), body.right.task, input.principal.username)
          yield* (yield* JobBus).publish({ _tag: "Queued" })
          return redirect(input.request, `/jobs/${job.id}`)
        })
      )
    )
    .get(
      "/agents/:name/run",
      portal.page("agents.manage", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(input.params["name"] ?? "")
          // Re-run: the form filled from an earlier job of this agent (the user starts it).
          const from = input.url.searchParams.get("from")
          const earlier =
            from === null
              ? undefined
              : yield* (yield* JobStore).get(from).pipe(
                  Effect.asSome,
                  Effect.catchTag("JobNotFound", () => Effect.succeedNone)
                )
          const values =
            earlier !== undefined && earlier._tag === "Some" && earlier.value.agentName === agent.name
              ? runValuesOfJob(earlier.value)
              : blankRun()
          // A workspace chosen above the form fills in its folders.
          const chosen = input.url.searchParams.get("workspace") ?? ""
          const places = yield* runPlaces(chosen)
          const workspace = places.workspaces.find((w) => w.path === chosen)
          if (chosen !== "" && workspace === undefined) {
            const problem = { path: "workspace.root", message: "the chosen workspace is not in the job roots (any more)" }
            return htmlResponse(runPage(input.page, agent.name, values, [problem], yield* runModels(agent.name), places), 400)
          }
          const filled = workspace === undefined ? values : runValuesOfWorkspace(values, workspace)
          return htmlResponse(runPage(input.page, agent.name, filled, [], yield* runModels(agent.name), places))
        })
      )
    )
    .post(
      "/agents/:name/run",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(input.params["name"] ?? "")
          const values = runValuesFrom(input.form)
          const places = yield* runPlaces(values.root)
          const decoded = yield* admitJob(jobBodyOf(agent.name, values))
          if (Either.isLeft(decoded)) {
            return htmlResponse(
              runPage(input.page, agent.name, values, withRoots(decoded.left, places.jobRoots), yield* runModels(agent.name), places),
              400
            )
          }
          const store = yield* JobStore
          const by = input.principal.username
          // The form's key makes a double click (or a resubmit) land on the job it already started.
          const outcome = IDEMPOTENCY_KEY.test(values.idempotencyKey)
            ? yield* Effect.either(store.enqueueOnce(decoded.right, by, values.idempotencyKey))
            : Either.right({ job: yield* store.enqueue(decoded.right, by), created: true })
          if (Either.isLeft(outcome)) {
            const problem = {
              path: "general",
              message: "This form already started a job with other values. Check the values and start again to run a new job."
            }
            return htmlResponse(
              runPage(
                input.page,
                agent.name,
                { ...values, idempotencyKey: blankRun().idempotencyKey },
                [problem],
                yield* runModels(agent.name),
                places
              ),
              409
            )
          }
          if (outcome.right.created) yield* (yield* JobBus).publish({ _tag: "Queued" })
          return redirect(input.request, `/jobs/${outcome.right.job.id}`)
        })
      )
    )
