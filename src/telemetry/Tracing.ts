/**
 * Span export: over OTLP/HTTP (protobuf, or JSON with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else Effect's in-process tracer and nothing leaves the process.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import packageJson from "../../package.json" with { type: "json" }

/** What the OTLP exporter is configured to do; `undefined` = no export. */
export interface OtlpSettings {
  /** The traces URL (the endpoint + `/v1/traces`, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given). */
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Record<string, string>
  readonly exportIntervalMs: number
}

const optional = (name: string) => Config.option(Config.string(name)).pipe(Config.map(Option.filter((v) => v.trim() !== "")))

/** `k=v,k2=v2` with URL-encoded values (the OTel environment format). */
const parseHeaders = (raw: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of raw.split(",")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    try {
      headers[decodeURIComponent(pair.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {
      // A pair that is not valid percent-encoding is skipped, as the OTel SDKs do.
    }
  }
  return headers
}

/** Reads the OTel variables; fails with the list of what is wrong (an unknown protocol, a bad interval). */
export const otlpSettings: Effect.Effect<OtlpSettings | undefined, string> = Effect.gen(function* () {
  const read = <A>(c: Config.Config<A>) => Effect.mapError(c, (e) => String(e))
  const disabled = yield* read(Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)))
  const base = yield* read(optional("OTEL_EXPORTER_OTLP_ENDPOINT"))
  const traces = yield* read(optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
  if (disabled || (Option.isNone(base) && Option.isNone(traces))) return undefined
  const url = Option.isSome(traces) ? traces.value : `${Option.getOrThrow(base).replace(/\/+$/, "")}/v1/traces`
  const tracesProtocol = yield* read(optional("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
  const anyProtocol = yield* read(optional("OTEL_EXPORTER_OTLP_PROTOCOL"))
  const protocol = Option.getOrElse(
    Option.orElse(tracesProtocol, () => anyProtocol),
    () => "http/protobuf"
  )
  const headers = yield* read(Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS")))
  const delay = yield* read(Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000)))
  const problems: Array<string> = []
  if (protocol !== "http/protobuf" && protocol !== "http/json")
    problems.push(`OTEL_EXPORTER_OTLP_PROTOCOL "${protocol}" is not supported (http/protobuf or http/json)`)
  if (!/^https?:\/\//i.test(url)) problems.push("the OTLP endpoint must be an http:// or https:// URL")
  if (delay <= 0) problems.push("OTEL_BSP_SCHEDULE_DELAY must be a positive number of milliseconds")
  if (problems.length > 0) return yield* Effect.fail(problems.join("; "))
  return {
    url,
    protocol: protocol as OtlpSettings["protocol"],
    headers: Option.match(headers, { onNone: () => ({}), onSome: (h) => parseHeaders(Redacted.value(h)) }),
    exportIntervalMs: delay
  }
})

/**
 * The tracer of the server: OTLP export when configured (service.name `OTEL_SERVICE_NAME`, default
 * "kintsugi"), flushed when the layer's scope closes. A configuration mistake fails the layer with
 * its message, so `kintsugi serve` refuses to start rather than silently exporting nothing.
 */
export const TracingLive: Layer.Layer<never, Error> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const settings = yield* Effect.mapError(otlpSettings, (m) => new Error(m))
    if (settings === undefined) return Layer.empty
    const serviceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(
      Config.withDefault("kintsugi"),
      Effect.orElseSucceed(() => "kintsugi")
    )
    const tracer = OtlpTracer.layer({
      url: settings.url,
      resource: { serviceName, serviceVersion: packageJson.version },
      headers: settings.headers,
      exportInterval: `${settings.exportIntervalMs} millis`
    })
    return tracer.pipe(
      Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(FetchHttpClient.layer)
    )
  })
)
