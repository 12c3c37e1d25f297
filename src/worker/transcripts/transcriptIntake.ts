/**
 * The worker's side of a job's transcript: the services channel's `transcript` endpoint (not a tool:
 * only a job whose token was minted with it may call it), which takes one turn per call and stores it
 * sealed. A project that turns transcripts off mid-job stops its jobs' turns from being stored.
 */
import { Effect, Layer, Schema } from "effect"
import { TranscriptTurn } from "../../job/Transcript.ts"
import { TRANSCRIPT_ENDPOINT } from "../../tools/services/ServiceChannel.ts"
import { Projects } from "../Projects.ts"
import { type ServiceHandler, ServiceHandlers } from "../Services.ts"
import { TranscriptStore } from "./TranscriptStore.ts"

/** Largest turn a job may hand over (its messages since the last turn and the answer, as JSON). */
const MAX_TURN_BYTES = 16 * 1024 * 1024

const decodeTurn = Schema.decodeUnknown(TranscriptTurn)

const makeTranscriptHandler: Effect.Effect<ServiceHandler, never, TranscriptStore | Projects> = Effect.gen(function* () {
  const store = yield* TranscriptStore
  const projects = yield* Projects
  return {
    name: TRANSCRIPT_ENDPOINT,
    params: TranscriptTurn,
    maxBytes: MAX_TURN_BYTES,
    refusal: ({ projectId }) =>
      projects.get(projectId).pipe(
        Effect.map((p) => (p.transcripts === "full" ? undefined : "transcripts are off for this project")),
        Effect.catchTag("ProjectNotFound", () => Effect.succeed("the job's project no longer exists"))
      ),
    handle: (input, grant) =>
      // Decoded by the endpoint with `params` already; decoded again here to type it. Failures are
      // logged by tag only: a decoder's or the store's message could quote the turn.
      decodeTurn(input).pipe(
        Effect.flatMap((turn) => store.append(grant.jobId, turn)),
        Effect.as({ text: "stored", isError: false }),
        Effect.catchAll((e) =>
          Effect.as(
            Effect.logWarning("a transcript turn was not stored").pipe(Effect.annotateLogs({ jobId: grant.jobId, error: e._tag })),
            {
              text: "the turn was not stored",
              isError: true
            }
          )
        )
      )
  }
})

/** `handlers` with the transcript endpoint added. */
export const withTranscriptIntake = <E, R>(
  handlers: Layer.Layer<ServiceHandlers, E, R>
): Layer.Layer<ServiceHandlers, E, R | TranscriptStore | Projects> =>
  Layer.effect(
    ServiceHandlers,
    Effect.gen(function* () {
      const others = yield* ServiceHandlers
      return [...others, yield* makeTranscriptHandler]
    })
  ).pipe(Layer.provide(handlers))
