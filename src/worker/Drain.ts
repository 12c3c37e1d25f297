/**
 * The graceful drain of a serve process's worker loops: once it begins no job is claimed, the jobs
 * running get `KINTSUGI_DRAIN_SEC` to finish, then are asked to end as aborted ("server shutting down").
 * Queued jobs stay queued for the next server.
 */
import { Config, Context, Deferred, Duration, Effect, Layer, Option, Schema, Stream, SubscriptionRef } from "effect"
import { ABORT_GRACE_MS } from "./child/JobProcess.ts"

/** The message of a job the drain ended. */
export const SERVER_SHUTTING_DOWN = "server shutting down"

/** `KINTSUGI_DRAIN_SEC` is not a whole number of seconds. */
export class DrainConfigInvalid extends Schema.TaggedError<DrainConfigInvalid>()("DrainConfigInvalid", { value: Schema.String }) {
  override get message(): string {
    return `KINTSUGI_DRAIN_SEC must be a whole number of seconds (0 or more), not "${this.value}"`
  }
}

export class Drain extends Context.Tag("worker/Drain")<
  Drain,
  {
    /** Runs `work` (a claim and the job it claims) unless the drain has begun; then runs nothing and gives none. */
    readonly admit: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<Option.Option<A>, E, R>
    /** True once the drain has begun. */
    readonly draining: Effect.Effect<boolean>
    /** True once running jobs must end now: the drain's time is up, or it was cut short. */
    readonly stopping: Effect.Effect<boolean>
    /**
     * Begins the drain and waits until no admitted work is left: up to `KINTSUGI_DRAIN_SEC` for jobs to
     * finish, then (`stopping`) for their aborted ends, for at most the abort grace and a margin.
     */
    readonly drain: Effect.Effect<void>
    /** Makes running jobs end now (a second signal during the drain); never fails. */
    readonly cutShort: Effect.Effect<void>
  }
>() {}

interface State {
  readonly draining: boolean
  readonly active: number
}

/** How long the drain waits for aborted jobs to record their end, beyond the child's abort grace. */
const SETTLE_MARGIN_MS = 5_000

/** `KINTSUGI_DRAIN_SEC`, default 30; unset or empty is the default, anything but a whole number fails. */
const drainSeconds: Effect.Effect<number, DrainConfigInvalid> = Config.option(Config.string("KINTSUGI_DRAIN_SEC")).pipe(
  Effect.orElseSucceed(() => Option.none<string>()),
  Effect.flatMap((value) => {
    const text = Option.getOrElse(value, () => "").trim()
    if (text === "") return Effect.succeed(30)
    const seconds = /^\d+$/.test(text) ? Number(text) : Number.NaN
    return Number.isSafeInteger(seconds) ? Effect.succeed(seconds) : Effect.fail(new DrainConfigInvalid({ value: text }))
  })
)

export const makeDrain = Effect.gen(function* () {
  const seconds = yield* drainSeconds
  const state = yield* SubscriptionRef.make<State>({ draining: false, active: 0 })
  const cut = yield* Deferred.make<void>()

  const admit = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        SubscriptionRef.modify(state, (s): [boolean, State] => (s.draining ? [false, s] : [true, { ...s, active: s.active + 1 }])),
        (admitted) =>
          admitted
            ? restore(work).pipe(
                Effect.map(Option.some),
                Effect.ensuring(SubscriptionRef.update(state, (s) => ({ ...s, active: s.active - 1 })))
              )
            : Effect.succeed(Option.none())
      )
    )

  const idle = state.changes.pipe(
    Stream.takeUntil((s) => s.active === 0),
    Stream.runDrain
  )
  const running = Effect.map(SubscriptionRef.get(state), (s) => s.active)

  const drain = Effect.gen(function* () {
    const before = yield* SubscriptionRef.modify(state, (s): [State, State] => [s, { ...s, draining: true }])
    if (!before.draining) {
      yield* Effect.logInfo(`draining: no job is claimed any more; running jobs have up to ${seconds} s to finish`).pipe(
        Effect.annotateLogs({ running: before.active, drainSec: seconds })
      )
    }
    const ended = yield* Effect.raceFirst(
      Effect.as(idle, "finished" as const),
      Effect.race(Effect.as(Effect.sleep(Duration.seconds(seconds)), "time" as const), Effect.as(Deferred.await(cut), "cut" as const))
    )
    if (ended !== "finished") {
      yield* Effect.logWarning(
        ended === "time" ? "drain time is up: running jobs end as aborted" : "drain cut short: running jobs end as aborted"
      ).pipe(Effect.annotateLogs({ running: yield* running, reason: SERVER_SHUTTING_DOWN }))
      yield* Deferred.succeed(cut, undefined)
      // Each job's abort poll sees `stopping` within a second; its child then has the abort grace.
      const left = yield* Effect.timeout(idle, Duration.millis(ABORT_GRACE_MS + SETTLE_MARGIN_MS)).pipe(
        Effect.as(0),
        Effect.catchTag("TimeoutException", () => running)
      )
      if (left > 0)
        yield* Effect.logError("drained with jobs still running; they end with the runtime").pipe(Effect.annotateLogs({ running: left }))
    }
    yield* Effect.logInfo("drained")
  })

  const service: Drain["Type"] = {
    admit,
    draining: Effect.map(SubscriptionRef.get(state), (s) => s.draining),
    stopping: Deferred.isDone(cut),
    drain,
    cutShort: Effect.asVoid(Deferred.succeed(cut, undefined))
  }
  return service
})

export const DrainLive: Layer.Layer<Drain, DrainConfigInvalid> = Layer.effect(Drain, makeDrain)
