/**
 * The job's transcript sink: before each model call the kernel hands it the turn it sends, and again
 * with the answer once it comes (already redacted); the job child sends each to the worker, which stores
 * it encrypted, the answered record replacing the unanswered one. Turns replay into the model's messages
 * byte for byte: start empty; per turn, cut the conversation to `compaction.kept` when present, append
 * `messages`, then `answer` (a turn without one is only ever the last).
 */
import { Context, Effect, Layer, Schema } from "effect"

const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "must be a SHA-256 in lower-case hex" }))
const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/** One message as the model's API took it (pi-ai's shape: a role and its fields, kept whole). */
export const TranscriptMessage = Schema.Struct(
  { role: Schema.Literal("user", "assistant", "toolResult") },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
export type TranscriptMessage = typeof TranscriptMessage.Type

/** One model call of a job and its answer, relative to the turns before it. */
export const TranscriptTurn = Schema.Struct({
  /** 1, 2, 3, … in the order the model was called. */
  turn: Schema.Number.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1)),
  /** SHA-256 of the system prompt as sent (instructions, skills, research-tools block). */
  instructionsHash: Sha256,
  /** SHA-256 of the tool definitions as sent (their JSON). */
  toolsHash: Sha256,
  /**
   * Present when compaction rewrote the conversation before this call: the first `kept` messages of the
   * conversation so far stayed, the `replaced` after them were replaced by this turn's `messages`;
   * `summaries` are the summaries the model wrote for it.
   */
  compaction: Schema.optionalWith(Schema.Struct({ kept: Count, replaced: Count, summaries: Schema.Array(Schema.String) }), { exact: true }),
  /** The messages this call added to the conversation (the task, tool results, compaction's summary pair). */
  messages: Schema.Array(TranscriptMessage),
  /**
   * The model's answer (text, thinking, tool calls with their inputs); absent while the call has not
   * answered (the turn is handed over once before the call, so its messages are kept even if it never does).
   */
  answer: Schema.optionalWith(TranscriptMessage, { exact: true })
})
export type TranscriptTurn = typeof TranscriptTurn.Type

/** The conversation after `turn`: `conversation` cut to what its compaction kept, then its messages, then its answer when it has one. */
export const applyTurn = (conversation: ReadonlyArray<TranscriptMessage>, turn: TranscriptTurn): ReadonlyArray<TranscriptMessage> => [
  ...conversation.slice(0, turn.compaction?.kept ?? conversation.length),
  ...turn.messages,
  ...(turn.answer === undefined ? [] : [turn.answer])
]

export class Transcript extends Context.Tag("job/Transcript")<
  Transcript,
  {
    /** Hands over one turn and waits until it is taken. Never fails: a turn that cannot be handed over is reported and dropped. */
    readonly record: (turn: TranscriptTurn) => Effect.Effect<void>
  }
>() {}

/** A sink over `send`; a failed send goes to `report` with its message (never the turn's content). */
export const make = <E extends { readonly message: string }>(
  send: (turn: TranscriptTurn) => Effect.Effect<void, E>,
  report: (line: string) => void
): Transcript["Type"] => ({
  record: (turn) =>
    Effect.catchAll(send(turn), (e) => Effect.sync(() => report(`transcript turn ${turn.turn} was not stored: ${e.message}`)))
})

/** Every turn lands in `into`, in order. */
export const layerTest = (into: Array<TranscriptTurn>): Layer.Layer<Transcript> =>
  Layer.succeed(Transcript, { record: (turn) => Effect.sync(() => void into.push(turn)) })
