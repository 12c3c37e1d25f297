/**
 * Evaluation runs (docs/evals.md): each eval of a version runs as a real job of the agent, through its
 * binding and the queue, worker and kernel every job takes, pinned to the evaluated version, in a fresh
 * workspace the server makes from the eval's fixture (inside the job roots: `<data dir>/workspaces` by
 * default) and removes afterwards. Its `expect` is then checked and the result stored per version. A
 * gated run (a save of a `gate: evals` agent) makes its version current when every eval passes.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Context, Duration, Effect, FiberSet, Layer, Queue, Schema } from "effect"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { dirname, join, resolve } from "node:path"
import { AgentStore } from "../../agents/AgentStore.ts"
import { EVALS_PROJECT } from "../../agents/agentWrites.ts"
import type { AgentNotFound, AgentVersionNotFound } from "../../agents/errors.ts"
import * as repo from "../../agents/evalRepo.ts"
import { parseEvals, type EvalSpec, type Fixture } from "../../agents/evalSpec.ts"
import { pathProblems } from "../../contract/packagePaths.ts"
import type { JobEvent } from "../../contract/JobEvent.ts"
import { Problem } from "../../contract/Problem.ts"
import { Bindings } from "../../providers/Bindings.ts"
import type { BindingNotFound } from "../../providers/errors.ts"
import { isInside } from "../../job/confinement.ts"
import { JobBus } from "../JobBus.ts"
import { JobRoots } from "../JobRoots.ts"
import { JobStore, type JobInput, type JobRow } from "../JobStore.ts"
import { LeaseConfig } from "../Worker.ts"
import { Projects } from "../Projects.ts"
import { checkEval } from "./checkEval.ts"

/** The version has no `evals/<name>.md`. */
export class NoEvals extends Schema.TaggedError<NoEvals>()("NoEvals", { name: Schema.String, version: Schema.Number }) {
  override get message(): string {
    return `agent "${this.name}" v${this.version} has no evals (add evals/<name>.md files to its package)`
  }
}
/** The run request cannot be run as asked (an unknown project). */
export class EvalsRefused extends Schema.TaggedError<EvalsRefused>()("EvalsRefused", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the eval run has problems"
  }
}
export class EvalRunNotFound extends Schema.TaggedError<EvalRunNotFound>()("EvalRunNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no eval run "${this.id}"`
  }
}

/** Each eval job's time limit, in seconds. */
const EVAL_JOB_TIMEOUT_SEC = 900
/** How often a waiting eval looks at its job when no signal came (a worker in another process). */
const POLL = Duration.seconds(1)
/** A running run from before leases is ended as `error` by the sweep this long after its last heartbeat. */
export const ABANDONED_AFTER_SEC = 60

export class Evals extends Context.Tag("worker/Evals")<
  Evals,
  {
    /**
     * Starts a run of every eval of `name` v`version` in `project` (default: the reserved eval project)
     * and returns it at once (`running`); its results arrive as its jobs settle.
     */
    readonly start: (
      name: string,
      version: number,
      by: string,
      options?: { readonly project?: string }
    ) => Effect.Effect<repo.EvalRun, AgentNotFound | AgentVersionNotFound | NoEvals | BindingNotFound | EvalsRefused>
    /** Runs of one version (or every version), newest first, with their results. */
    readonly runs: (name: string, version?: number) => Effect.Effect<ReadonlyArray<repo.EvalRun>>
    readonly run: (id: string) => Effect.Effect<repo.EvalRun, EvalRunNotFound>
    /**
     * Starts the runs gated saves queued (`waiting`): after a save, and by the worker's sweep; first ends
     * as `error` the running runs whose lease ran out (their process was killed outright), as jobs are.
     */
    readonly kick: Effect.Effect<void>
  }
>() {}

/** A fresh directory inside the first job root of `project`: `work/` (the fixture, read-only) and `out/`. */
const createWorkspace = (base: string, fixture: Fixture) =>
  Effect.promise(async () => {
    const dir = await mkdtemp(join(base, "kintsugi-eval-"))
    const root = join(dir, "work")
    const out = join(dir, "out")
    await mkdir(root, { mode: 0o700 })
    await mkdir(out, { mode: 0o700 })
    for (const f of fixture.files) {
      const target = resolve(root, f.path)
      // The package checks refused these already; a fixture file still never lands outside its folder.
      if (pathProblems(f.path).length > 0 || !isInside(target, root) || target === root) continue
      await mkdir(dirname(target), { recursive: true, mode: 0o700 })
      await writeFile(target, f.content, { flag: "wx", mode: 0o600 })
    }
    return { dir, root, out }
  })

const makeEvals = Effect.gen(function* () {
  const sql = yield* SqlClient
  const agents = yield* AgentStore
  const bindings = yield* Bindings
  const jobs = yield* JobStore
  const bus = yield* JobBus
  const roots = yield* JobRoots
  const projects = yield* Projects
  const fibers = yield* FiberSet.make()
  // The job lease: a run is held like a job, renewed every heartbeat, swept once it runs out.
  const lease = yield* LeaseConfig
  // The eval runner's statements run in background fibers with no caller to answer: a store failure is a defect.
  const provide = <A, E>(e: Effect.Effect<A, E, SqlClient>) => Effect.orDie(Effect.provideService(e, SqlClient, sql))

  type Run = {
    readonly id: string
    readonly agent: string
    readonly version: number
    readonly project: string
    readonly by: string
    readonly gate: boolean
  }
  /** An eval whose job is queued in its workspace, or one that could not get a workspace. */
  type Queued =
    | {
        readonly kind: "queued"
        readonly spec: EvalSpec
        readonly started: number
        readonly dir: string
        readonly out: string
        readonly job: JobRow
      }
    | { readonly kind: "refused"; readonly spec: EvalSpec; readonly started: number; readonly problem: string }

  /** Makes the eval's workspace from its fixture and queues its job, pinned to the run's version. */
  const queueOne = (run: Run, spec: EvalSpec, fixture: Fixture) =>
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const boundary = yield* roots.boundaryFor(run.project)
      const base = boundary.jobRoots[0]
      if (base === undefined) {
        const refused: Queued = {
          kind: "refused",
          spec,
          started,
          problem: "no job root can hold the eval's workspace (the project's root is not inside the job roots)"
        }
        return refused
      }
      const ws = yield* createWorkspace(base, fixture)
      const input: JobInput = {
        project: run.project,
        agent: run.agent,
        task: spec.task,
        workspace: { root: ws.root, readOnly: [ws.root], outDir: ws.out },
        limits: {
          timeoutSec: EVAL_JOB_TIMEOUT_SEC,
          ...(spec.expect["max-turns"] === undefined ? {} : { maxTurns: spec.expect["max-turns"] }),
          ...(spec.expect["max-cost-usd"] === undefined ? {} : { maxCostUsd: spec.expect["max-cost-usd"] })
        },
        metadata: { evalRun: run.id, eval: spec.name },
        agentVersion: run.version
      }
      const job = yield* Effect.onInterrupt(jobs.enqueue(input, run.by), () =>
        Effect.promise(() => rm(ws.dir, { recursive: true, force: true }))
      )
      yield* bus.publish({ _tag: "Queued" })
      const queued: Queued = { kind: "queued", spec, started, dir: ws.dir, out: ws.out, job }
      return queued
    })

  /** Waits for a queued eval's job to settle and checks its `expect`; the workspace is removed afterwards, whatever happened. */
  const settleOne = (q: Queued) =>
    q.kind === "refused"
      ? Effect.succeed({ problems: [q.problem], job: undefined, started: q.started })
      : Effect.gen(function* () {
          // Woken by the job's events in this process; the poll covers a worker in another one.
          const signals = yield* bus.subscribe
          // The job was enqueued by this run: JobNotFound or a store failure while waiting is a defect of the run.
          let job: JobRow = yield* Effect.orDie(jobs.get(q.job.id))
          while (job.status === "queued" || job.status === "running") {
            yield* Effect.race(
              Effect.repeat(Queue.take(signals), { until: (s) => s._tag === "Events" && s.jobId === q.job.id }),
              Effect.sleep(POLL)
            )
            job = yield* Effect.orDie(jobs.get(q.job.id))
          }
          const events = yield* jobs.events(job.id, 0)
          const outputs = events.flatMap((e) => (e.type === "output" ? [e.path] : []))
          const grounding = events.find((e): e is Extract<JobEvent, { type: "grounding" }> => e.type === "grounding")
          const problems = yield* Effect.promise(() => checkEval(q.spec.expect, { job, outputs, grounding, outDir: q.out }))
          return { problems, job: job as JobRow | undefined, started: q.started }
        }).pipe(Effect.scoped, Effect.ensuring(Effect.promise(() => rm(q.dir, { recursive: true, force: true }))))

  const fixtureOf = (fixtures: ReadonlyMap<string, Fixture>, spec: EvalSpec): Fixture =>
    fixtures.get(spec.fixture) ?? { folder: spec.fixture, files: [] }

  /**
   * Every eval of the run, one after the other (the first one's job already queued by `launch`); then
   * the verdict (and, for a gated run, the promotion).
   */
  const execute = (run: Run, evals: ReadonlyArray<EvalSpec>, fixtures: ReadonlyMap<string, Fixture>, first: Queued) =>
    Effect.gen(function* () {
      let failed = 0
      for (const [i, spec] of evals.entries()) {
        const queued = i === 0 ? first : yield* queueOne(run, spec, fixtureOf(fixtures, spec))
        const { problems, job, started } = yield* settleOne(queued)
        const settledAt = yield* Clock.currentTimeMillis
        if (problems.length > 0) failed++
        yield* provide(
          repo.insertResult(run.id, {
            eval: spec.name,
            passed: problems.length === 0,
            problems,
            costUsd: job?.costUsd ?? null,
            durationMs: settledAt - started,
            grounding: job?.grounding ?? null,
            jobId: job?.id ?? null
          })
        )
      }
      if (run.gate && failed === 0) {
        // Promotes only while the run is unfinished: one a sweep ended meanwhile changes nothing.
        yield* provide(repo.finishPassedGate(run.id, run.agent, run.version))
      } else {
        const message = run.gate ? `v${run.version} stays not current: ${failed} of ${evals.length} evals failed` : ""
        yield* provide(repo.finishRun(run.id, failed > 0 ? "failed" : "passed", message))
      }
      yield* Effect.logInfo("eval run finished").pipe(
        Effect.annotateLogs({ evalRun: run.id, agent: run.agent, version: run.version, failed })
      )
    }).pipe(
      // The lease the sweeps look at (endAbandoned): a failed renewal is logged and the next one tried;
      // once the run is no longer running (a sweep ended it after a long stall), the run stops here too.
      (body) => Effect.raceFirst(body, heartbeat(run.id)),
      Effect.onInterrupt(() => provide(repo.finishRun(run.id, "error", "the server stopped during the run"))),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logError("eval run failed", cause),
          provide(repo.finishRun(run.id, "error", "the eval run failed on the server (see its log)"))
        )
      )
    )

  /** Renews the run's lease every heartbeat until the run is found no longer running; never fails. */
  const heartbeat = (runId: string): Effect.Effect<void> =>
    Effect.sleep(Duration.millis(lease.heartbeatMs)).pipe(
      Effect.zipRight(provide(repo.beat(runId, lease.leaseMs))),
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logWarning("an eval run's heartbeat could not be written; trying again", cause), true)
      ),
      Effect.repeat({ while: (running) => running }),
      Effect.zipRight(
        Effect.logWarning("eval run ended by a sweep while it ran: stopping it").pipe(Effect.annotateLogs({ evalRun: runId }))
      ),
      Effect.asVoid
    )

  /** The version's evals, or NoEvals. */
  const evalsOf = (name: string, version: number) =>
    Effect.gen(function* () {
      const pkg = yield* agents.exportPackage(name, version)
      const parsed = parseEvals(pkg.evals ?? [])
      if (parsed.evals.length === 0) return yield* new NoEvals({ name, version })
      return parsed
    })

  /** Queues the first eval's job now (the caller sees it queued), then runs the rest in the background. */
  const launch = (r: repo.EvalRun, parsed: { evals: ReadonlyArray<EvalSpec>; fixtures: ReadonlyMap<string, Fixture> }) =>
    Effect.gen(function* () {
      const run: Run = { id: r.id, agent: r.agent, version: r.version, project: r.project, by: r.startedBy, gate: r.gate }
      const spec = parsed.evals[0]
      if (spec === undefined) return yield* provide(repo.finishRun(run.id, "error", "no evals"))
      const first = yield* Effect.catchAllCause(queueOne(run, spec, fixtureOf(parsed.fixtures, spec)), (cause) =>
        Effect.zipRight(
          Effect.logError("queueing an eval job failed", cause),
          Effect.map(
            Clock.currentTimeMillis,
            (started) => ({ kind: "refused", spec, started, problem: "the eval's job could not be queued (see the server log)" }) as const
          )
        )
      )
      yield* FiberSet.run(fibers, execute(run, parsed.evals, parsed.fixtures, first))
    })

  const getRun = (id: string) =>
    Effect.flatMap(provide(repo.selectRun(id)), (r) => (r === undefined ? Effect.fail(new EvalRunNotFound({ id })) : Effect.succeed(r)))

  const service: Evals["Type"] = {
    start: (name, version, by, options = {}) =>
      Effect.gen(function* () {
        const project = options.project ?? EVALS_PROJECT
        if (options.project !== undefined) {
          yield* Effect.catchTag(
            projects.get(project),
            "ProjectNotFound",
            () => new EvalsRefused({ problems: [{ path: "project", message: `no project "${project}"` }] })
          )
        }
        const parsed = yield* evalsOf(name, version)
        yield* bindings.resolve(name, project)
        const id = yield* provide(
          repo.insertRun({ agent: name, version, project, gate: false, status: "running", leaseMs: lease.leaseMs, by })
        )
        // The run was inserted just above: not finding it is a defect.
        const run = yield* Effect.orDie(getRun(id))
        yield* launch(run, parsed)
        return run
      }),
    runs: (name, version) => provide(repo.selectRuns(name, version)),
    run: getRun,
    kick: Effect.gen(function* () {
      for (const gone of yield* provide(repo.endAbandoned(ABANDONED_AFTER_SEC))) {
        yield* Effect.logWarning("eval run abandoned: its server stopped without finishing it").pipe(
          Effect.annotateLogs({ evalRun: gone.id, agent: gone.agentName, version: gone.version })
        )
      }
      for (const run of yield* provide(repo.claimWaiting(lease.leaseMs))) {
        const parsed = yield* Effect.either(evalsOf(run.agent, run.version))
        const binding = yield* Effect.either(bindings.resolve(run.agent, run.project))
        if (parsed._tag === "Left" || binding._tag === "Left") {
          const why = parsed._tag === "Left" ? parsed.left.message : binding._tag === "Left" ? binding.left.message : ""
          yield* provide(repo.finishRun(run.id, "error", `v${run.version} stays not current: ${why}`))
        } else yield* launch(run, parsed.right)
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("starting gated eval runs failed", cause)))
  }
  return service
})

export const EvalsLive = Layer.scoped(Evals, makeEvals)

/** With the worker loops: starts the runs gated saves queued, at start and every few seconds (saves in any process). */
export const EvalsSweepLive: Layer.Layer<never, never, Evals> = Layer.scopedDiscard(
  Effect.flatMap(Evals, (evals) => Effect.forkScoped(Effect.forever(Effect.zipRight(evals.kick, Effect.sleep(Duration.seconds(5)))))).pipe(
    Effect.withTracerEnabled(false)
  )
)
