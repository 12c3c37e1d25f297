/**
 * The retention sweep of transcripts, as a background loop of the serving process (beside the worker
 * loops): at start and then hourly, every turn older than its project's retention is deleted
 * (TranscriptStore.sweep). Several serve processes may sweep at once: the delete is idempotent.
 */
import { Duration, Effect, Layer } from "effect"
import { TranscriptStore } from "./TranscriptStore.ts"

const once = Effect.flatMap(TranscriptStore, (store) => store.sweep).pipe(
  Effect.tap((deleted) =>
    deleted === 0 ? Effect.void : Effect.logInfo("transcript retention sweep").pipe(Effect.annotateLogs({ deleted }))
  ),
  Effect.catchAllCause((cause) => Effect.logError("the transcript retention sweep failed", cause)),
  Effect.withTracerEnabled(false)
)

export const TranscriptSweepLive: Layer.Layer<never, never, TranscriptStore> = Layer.scopedDiscard(
  Effect.forkScoped(Effect.forever(Effect.zipRight(once, Effect.sleep(Duration.hours(1)))))
)
