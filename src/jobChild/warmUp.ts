/**
 * What a job child started ahead (the worker's pool, `run-job --ahead`) does while it waits for its
 * envelope, so that envelope → job.started is only parse, validate and emit: it loads the modules a job
 * may need, probes the sandbox, starts and warms grep's search workers and rehearses a whole job on a document of
 * its own (`WARM_UP_ENVELOPE`: no model request, no file written, no process but the probe, no network,
 * no search). The steps run one at a time and stop as soon as the envelope arrives, so a job waits at
 * most for the step under way; a step that fails leaves its work to the job.
 */
import { Deferred, Effect, Exit } from "effect"
import { closeSync, openSync } from "node:fs"
import { tmpdir } from "node:os"
import type { JobEvent } from "../contract/JobEvent.ts"
import { writeLine } from "./exit.ts"
import { runEnvelope, type RunOutput } from "./run.ts"
import { LlmFailed } from "../kernel/errors.ts"
import { piAiLlm, type MakeLlm } from "../kernel/Kernel.ts"
import { Llm } from "../kernel/Llm.ts"
import { API_IMPLEMENTATION_MODULES, makeJobModels } from "../kernel/PiAiModels.ts"
import { warmUpWorkers } from "../tools/grepPool.ts"
import { makeSandbox, type SandboxConfig } from "../tools/Sandbox.ts"

/**
 * The rehearsal's document: every part of a job the decoders know (tools, skills, deny patterns, MCP
 * servers, limits, metadata), one custom and one built-in provider, a boundary. No key, no address the
 * rehearsal ever reaches (see noModelCalls), and a workspace of directories every system has.
 */
export const WARM_UP_ENVELOPE = {
  job: {
    agent: {
      id: "warm-up",
      version: 1,
      instructions: "Warm-up.",
      skills: [{ name: "warm-up", content: "Warm-up." }],
      tools: ["read", "ls", "grep", "find", "write", "edit", "codemode", "shell", "git"],
      denyCommandPatterns: ["^rm\\s+-rf\\b"],
      thinking: "low"
    },
    task: "Warm-up.",
    model: { provider: "warm-up", id: "warm-up-model" },
    workspace: { root: "/usr", readOnly: ["/usr"], outDir: tmpdir() },
    limits: { timeoutSec: 60, idleTimeoutSec: 30, maxTurns: 1, maxCostUsd: 1 },
    mcp: { servers: [] },
    metadata: { trigger: "warm-up" }
  },
  providers: [
    {
      id: "warm-up",
      api: "openai-completions",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "",
      models: [{ id: "warm-up-model", contextWindow: 8192, maxTokens: 1024, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }]
    },
    { id: "warm-up-builtin", builtin: "anthropic", apiKey: "" }
  ],
  boundary: { jobRoots: ["/"], forbidden: ["/nonexistent/kintsugi-warm-up"] }
} as const

/** pi-ai's model service, built as for a job, whose every call fails before a request is made. */
const noModelCalls: MakeLlm = (job) =>
  Effect.map(piAiLlm(job), (llm) => {
    const refused = Effect.fail(new LlmFailed({ message: "the warm-up makes no model call" }))
    return Llm.of({ model: llm.model, complete: () => refused, summarise: () => refused })
  })

/** /dev/null for the rehearsal's lines (encoded and written as a job's are); undefined if it cannot be opened. */
const openDevNull = Effect.sync(() => {
  try {
    return openSync("/dev/null", "w")
  } catch {
    return undefined
  }
})
const closeQuietly = (fd: number | undefined) =>
  Effect.sync(() => {
    try {
      if (fd !== undefined) closeSync(fd)
    } catch {
      // Already gone.
    }
  })

/**
 * The rehearsal: WARM_UP_ENVELOPE's job run to its end with noModelCalls (without shell and git where
 * they would be refused), from its JSON text through the job child's own path (jobChild/run.ts), each
 * event encoded and written to /dev/null. Returns its events (the child drops them); none when it was
 * refused. Interrupting it (the envelope arrived) ends the rehearsed job as aborted, at once.
 */
export const rehearse = (sandbox: SandboxConfig): Effect.Effect<ReadonlyArray<JobEvent>> =>
  Effect.acquireUseRelease(
    openDevNull,
    (devNull) =>
      Effect.gen(function* () {
        const agent = WARM_UP_ENVELOPE.job.agent
        const refusal = yield* makeSandbox(sandbox).refusal
        const tools = refusal === undefined ? agent.tools : agent.tools.filter((t) => t !== "shell" && t !== "git")
        const text = JSON.stringify({ ...WARM_UP_ENVELOPE, job: { ...WARM_UP_ENVELOPE.job, agent: { ...agent, tools } } })
        const events: Array<JobEvent> = []
        const output: RunOutput = {
          event: (event) => {
            events.push(event)
            try {
              if (devNull !== undefined) writeLine(devNull, JSON.stringify(event))
            } catch {
              // Not rehearsed: the job writes its first line itself.
            }
          },
          refusal: () => {},
          diagnostics: () => {}
        }
        const result = yield* runEnvelope(text, { sandbox }, output, noModelCalls)
        return result._tag === "Exit" && result.code !== 2 ? events : []
      }),
    closeQuietly
  )

/** One step of the warm-up; interrupted once the envelope is there (a long step stops early). */
export type WarmUpStep = Effect.Effect<unknown, unknown>

/** How many times the job start is rehearsed: once to load and check everything, more for the JIT. */
const REHEARSALS = 4

/** The warm-up of a child that will run with `sandbox`, cheapest first. */
export const warmUpSteps = (sandbox: SandboxConfig): ReadonlyArray<WarmUpStep> => [
  Effect.promise(() => Promise.all([import("../tools/codemode/codemode.ts"), import("../tools/mcp/mcpTools.ts")])),
  Effect.promise(() => Promise.all([import("../tools/services/serviceTools.ts"), import("../tools/services/ServiceChannel.ts")])),
  makeSandbox(sandbox).status,
  // grep's search workers, so a job's first grep call finds them loaded and their scanning code compiled.
  Effect.promise(warmUpWorkers),
  // pi-ai's catalog of built-in providers (the model registry a built-in provider config reads).
  Effect.promise(() => makeJobModels(WARM_UP_ENVELOPE.providers)),
  rehearse(sandbox),
  // pi-ai's API implementations, which a job otherwise loads at its first model call (after job.started).
  ...API_IMPLEMENTATION_MODULES.map((load) => Effect.promise(load)),
  // Again, so the start path is compiled by the JIT, not interpreted, when the job takes it.
  ...Array.from({ length: REHEARSALS - 1 }, () => rehearse(sandbox)),
  // A full collection now, so none lands on the job's start (a collection pending when the envelope
  // arrives delays its read by milliseconds).
  Effect.sync(() => Bun.gc(true))
]

/** One turn of the event loop: a read of stdin that completed meanwhile is seen before the next step. */
const nextTurn = Effect.async<void>((resume) => {
  setImmediate(() => resume(Effect.void))
})

/**
 * Runs `steps` one at a time until `arrival` (the read of the envelope) settles, interrupting the step
 * under way then; returns how many ran. A step that fails only leaves its work to the job.
 */
export const warmUpWhileWaiting = (arrival: Promise<unknown>, steps: ReadonlyArray<WarmUpStep>): Effect.Effect<number> =>
  Effect.gen(function* () {
    const arrived = yield* Deferred.make<void>()
    const settle = () => void Deferred.unsafeDone(arrived, Exit.void)
    arrival.then(settle, settle)
    let done = 0
    for (const step of steps) {
      yield* nextTurn
      if (yield* Deferred.isDone(arrived)) break
      yield* Effect.raceFirst(
        Effect.catchAllCause(step, () => Effect.void),
        Deferred.await(arrived)
      )
      done++
    }
    return done
  })
