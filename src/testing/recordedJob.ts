/**
 * The files of an exported job test (`kintsugi jobs export-test`): `job.json` (what to run),
 * `model.json` (the model's recorded turns as scripted steps) and `expected.json` (the tool calls,
 * outputs and summary the job's events recorded), with the pure functions that make them.
 */
import { Schema } from "effect"
import type { JobEvent } from "../contract/JobEvent.ts"
import type { TranscriptTurn } from "../job/Transcript.ts"
import type { TurnStep } from "./scriptedSteps.ts"

/** A read-only entry of the job's workspace, relative to its root. */
const ReadOnlyEntry = Schema.Struct({ path: Schema.String, kind: Schema.Literal("dir", "file") })

/** `job.json`: the job to replay. Paths are relative to the export folder (`agent`) or the workspace root. */
export const RecordedJob = Schema.Struct({
  jobId: Schema.String,
  /** The agent package's folder in the export, its name and the version the job ran. */
  agent: Schema.Struct({ folder: Schema.String, name: Schema.String, version: Schema.Number }),
  task: Schema.String,
  /** The workspace: `workspace/` of the export is its root; these entries are read-only; writes land in `outDir`. */
  workspace: Schema.Struct({ folder: Schema.String, readOnly: Schema.Array(ReadOnlyEntry), outDir: Schema.String }),
  /** The number of model calls the script answers (turns and compaction summaries). */
  modelCalls: Schema.Number,
  /** The job's model window as its provider is configured at export time (compaction replays at the same points); absent: 128,000. */
  model: Schema.optionalWith(Schema.Struct({ contextWindow: Schema.Number, maxTokens: Schema.Number }), { exact: true }),
  /** The folder of the custom shared skills the package names (`<name>.md` each); built-in ones ship with the runtime. */
  sharedSkills: Schema.optionalWith(Schema.String, { exact: true })
})
export type RecordedJob = typeof RecordedJob.Type

/** One tool call as the job's `tool.call` event recorded it. */
const ExpectedCall = Schema.Struct({ tool: Schema.String, input: Schema.Unknown, allowed: Schema.Boolean })

/** `expected.json`: what the replay must reproduce. */
export const ExpectedRun = Schema.Struct({
  toolCalls: Schema.Array(ExpectedCall),
  /** Paths of the `output` events, in order (relative to the output directory). */
  outputs: Schema.Array(Schema.String),
  summary: Schema.String,
  /** The typed answer of `job.completed`, when the agent declares one. */
  answer: Schema.optionalWith(Schema.Unknown, { exact: true })
})
export type ExpectedRun = typeof ExpectedRun.Type

/** One step of `model.json`: a scripted turn (the `turn` steps of the scripted servers, as JSON). */
const ModelTurn = Schema.Struct({
  kind: Schema.Literal("turn"),
  text: Schema.optionalWith(Schema.String, { exact: true }),
  thinking: Schema.optionalWith(Schema.String, { exact: true }),
  toolCalls: Schema.optionalWith(
    Schema.Array(
      Schema.Struct({
        id: Schema.optionalWith(Schema.String, { exact: true }),
        name: Schema.String,
        arguments: Schema.Union(Schema.Record({ key: Schema.String, value: Schema.Unknown }), Schema.String)
      })
    ),
    { exact: true }
  ),
  usage: Schema.optionalWith(
    Schema.Struct({
      input: Schema.Number,
      output: Schema.Number,
      cacheRead: Schema.optionalWith(Schema.Number, { exact: true }),
      cacheWrite: Schema.optionalWith(Schema.Number, { exact: true })
    }),
    { exact: true }
  ),
  finish: Schema.optionalWith(Schema.Literal("stop", "tool_calls", "length"), { exact: true })
})
/** `model.json`: the model's answers, one step per model call. */
export const ModelScript = Schema.Array(ModelTurn)

const Usage = Schema.Struct({ input: Schema.Number, output: Schema.Number, cacheRead: Schema.Number, cacheWrite: Schema.Number })
const Block = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("thinking"), thinking: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("toolCall"),
    id: Schema.String,
    name: Schema.String,
    arguments: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  }),
  Schema.Struct({ type: Schema.String })
)
/** What a replay needs of a recorded answer (pi-ai's AssistantMessage). */
const Answer = Schema.Struct({
  content: Schema.Array(Block),
  usage: Schema.optional(Usage),
  stopReason: Schema.optional(Schema.String)
})
const decodeAnswer = Schema.decodeUnknownEither(Answer)

/** A recorded turn that cannot become a step: the turn's number and why. */
export class TurnNotReplayable extends Error {
  constructor(
    readonly turn: number,
    readonly why: string
  ) {
    super(`turn ${turn} cannot be replayed: ${why}`)
    this.name = "TurnNotReplayable"
  }
}

/** The scripted step that answers as the recorded answer did: its text, thinking, tool calls (ids kept) and usage. */
const stepOf = (turn: number, answer: unknown): TurnStep => {
  const decoded = decodeAnswer(answer)
  if (decoded._tag === "Left") throw new TurnNotReplayable(turn, "its answer is not an assistant message")
  const { content, usage, stopReason } = decoded.right
  const text = content.flatMap((b) => ("text" in b ? [b.text] : [])).join("")
  const thinking = content.flatMap((b) => ("thinking" in b ? [b.thinking] : [])).join("")
  const toolCalls = content.flatMap((b) => ("arguments" in b ? [{ id: b.id, name: b.name, arguments: b.arguments }] : []))
  return {
    kind: "turn",
    ...(text === "" ? {} : { text }),
    ...(thinking === "" ? {} : { thinking }),
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    ...(usage === undefined
      ? {}
      : { usage: { input: usage.input, output: usage.output, cacheRead: usage.cacheRead, cacheWrite: usage.cacheWrite } }),
    ...(stopReason === "length" ? { finish: "length" as const } : {})
  }
}

/**
 * The model's side of a job as scripted steps, one per model call: before a turn that compaction
 * rewrote, one text step per summary the model wrote; then the turn's answer. Every turn 1…n must be
 * there with its answer; otherwise throws TurnNotReplayable (the replay would not be the job).
 */
export const scriptOf = (turns: ReadonlyArray<TranscriptTurn>): Array<TurnStep> => {
  const steps: Array<TurnStep> = []
  for (const [i, t] of turns.entries()) {
    if (t.turn !== i + 1) throw new TurnNotReplayable(i + 1, "the transcript does not hold it")
    // A turn stored before its model call returned (its job was interrupted) has no answer to replay.
    const answer: unknown = t.answer
    if (answer === undefined) throw new TurnNotReplayable(t.turn, "the model's answer was not recorded")
    for (const summary of t.compaction?.summaries ?? []) steps.push({ kind: "turn", text: summary })
    steps.push(stepOf(t.turn, answer))
  }
  return steps
}

/** What the job's events recorded: its tool calls (name, input, allowed), output paths and final summary. */
export const expectedOf = (events: ReadonlyArray<JobEvent>): ExpectedRun | undefined => {
  const completed = events.find((e) => e.type === "job.completed")
  if (completed === undefined) return undefined
  return {
    toolCalls: events.flatMap((e) => (e.type === "tool.call" ? [{ tool: e.tool, input: e.input, allowed: e.allowed }] : [])),
    outputs: events.flatMap((e) => (e.type === "output" ? [e.path] : [])),
    summary: completed.summary,
    ...(completed.answer === undefined ? {} : { answer: completed.answer })
  }
}
