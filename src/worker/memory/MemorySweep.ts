/**
 * The retention sweep of project memory, as a background loop of the serving process (beside the worker
 * loops): at start and then every KINTSUGI_MEMORY_SWEEP seconds (default 3600) each project's retention
 * is applied (MemoryStore.sweep). Several serve processes may sweep at once: every step is idempotent.
 */
import { Config, Duration, Effect, Layer } from "effect"
import { MemoryStore } from "./MemoryStore.ts"

const once = Effect.flatMap(MemoryStore, (store) => store.sweep).pipe(
  Effect.tap((c) =>
    c.expired + c.purged + c.scratchpads + c.logs === 0
      ? Effect.void
      : Effect.logInfo("memory retention sweep").pipe(Effect.annotateLogs({ ...c }))
  ),
  Effect.catchAllCause((cause) => Effect.logError("the memory retention sweep failed", cause)),
  Effect.withTracerEnabled(false)
)

export const MemorySweepLive: Layer.Layer<never, never, MemoryStore> = Layer.scopedDiscard(
  Effect.gen(function* () {
    const seconds = yield* Config.number("KINTSUGI_MEMORY_SWEEP").pipe(
      Config.withDefault(3600),
      Effect.orElseSucceed(() => 3600)
    )
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(once, Effect.sleep(Duration.seconds(seconds > 0 ? seconds : 3600)))))
  })
)
