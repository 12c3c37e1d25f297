/**
 * The server's log lines (Effect `Logger`): one JSON object per line, or a compact human line on a
 * terminal (`KINTSUGI_LOG_FORMAT=json|pretty`). Lines carry the trace and span ids of the current span.
 */
import { Cause, Config, Context, Effect, FiberRef, FiberRefs, HashMap, Layer, Logger, Option, Tracer } from "effect"

export type LogFormat = "json" | "pretty"

/** `KINTSUGI_LOG_FORMAT`; default pretty when stderr is a terminal, else json. Another value fails, naming it. */
export const logFormat: Effect.Effect<LogFormat, Error> = Config.option(Config.string("KINTSUGI_LOG_FORMAT")).pipe(
  Effect.orElseSucceed(() => Option.none<string>()),
  Effect.flatMap(
    Option.match({
      onNone: () => Effect.succeed<LogFormat>(process.stderr.isTTY === true ? "pretty" : "json"),
      onSome: (v) =>
        v === "json" || v === "pretty" || v === ""
          ? Effect.succeed<LogFormat>(v === "" ? (process.stderr.isTTY === true ? "pretty" : "json") : v)
          : Effect.fail(new Error(`KINTSUGI_LOG_FORMAT must be json or pretty, not "${v}"`))
    })
  )
)

/**
 * Fields of one line passed with its message (`Effect.logInfo("http request", new LogFields({ … }))`):
 * written as the annotations are, without changing the fiber's annotations (a `FiberRef` update that
 * costs more than the line on a path taken per request). Other loggers see the plain fields.
 */
export class LogFields {
  constructor(readonly fields: Readonly<Record<string, unknown>>) {}
  toJSON(): Readonly<Record<string, unknown>> {
    return this.fields
  }
}

const partsOf = (message: unknown): ReadonlyArray<unknown> => (Array.isArray(message) ? message : [message])

const text = (parts: ReadonlyArray<unknown>): string =>
  parts
    .filter((p) => !(p instanceof LogFields))
    .map((p) => (typeof p === "string" ? p : JSON.stringify(p)))
    .join(" ")

/** Renders one log entry as a line (without the newline); both formats hold the same fields. */
export const lineLogger = (format: LogFormat): Logger.Logger<unknown, string> =>
  Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
    const fields: Record<string, unknown> = {}
    for (const [k, v] of HashMap.toEntries(annotations)) fields[k] = v
    const parts = partsOf(message)
    for (const p of parts) if (p instanceof LogFields) Object.assign(fields, p.fields)
    const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
    if (Option.isSome(span) && span.value.traceId !== "native") {
      fields["traceId"] = span.value.traceId
      fields["spanId"] = span.value.spanId
    }
    // The first line only: the rest is a stack trace, for a debugger rather than a log.
    if (!Cause.isEmpty(cause)) fields["cause"] = Cause.pretty(cause).split("\n")[0]
    const level = logLevel.label.toLowerCase()
    if (format === "json") return JSON.stringify({ time: date.toISOString(), level, msg: text(parts), ...fields })
    const rest = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    return [date.toISOString().slice(11, 23), level.toUpperCase().padEnd(5), text(parts), ...rest].join(" ")
  })

/** The runtime's logger: lines in the configured format handed to `sink` (stderr for `kintsugi serve`). */
export const LoggingLive = (sink: (line: string) => void): Layer.Layer<never, Error> =>
  Layer.unwrapEffect(Effect.map(logFormat, (format) => Logger.replace(Logger.defaultLogger, Logger.map(lineLogger(format), sink))))
