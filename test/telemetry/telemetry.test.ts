/**
 * Telemetry configuration and formats: the OTel variables read (and refused), traceparent parsing,
 * the log line formats, and the Prometheus text of the metrics.
 */
import { describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Either, Logger } from "effect"
import { LogFields, logFormat, lineLogger } from "../../src/telemetry/Logging.ts"
import { makeMetrics } from "../../src/telemetry/Metrics.ts"
import { formatTraceParent, parseTraceParent } from "../../src/telemetry/traceParent.ts"
import { otlpSettings } from "../../src/telemetry/Tracing.ts"

const withEnv = <A, E>(effect: Effect.Effect<A, E>, env: Record<string, string>) =>
  Effect.runPromise(Effect.either(Effect.withConfigProvider(effect, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("OTLP settings", () => {
  test("unset endpoint: no export", async () => {
    expect(await withEnv(otlpSettings, {})).toEqual(Either.right(undefined))
  })
  test("the endpoint gets /v1/traces; protobuf by default; headers decoded", async () => {
    const r = await withEnv(otlpSettings, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=a%20b,bad"
    })
    expect(r).toEqual(
      Either.right({
        url: "http://collector:4318/v1/traces",
        protocol: "http/protobuf",
        headers: { "x-api-key": "a b" },
        exportIntervalMs: 5000
      })
    )
  })
  test("the traces endpoint and protocol win over the general ones", async () => {
    const r = await withEnv(otlpSettings, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json"
    })
    expect(Either.map(r, (s) => [s?.url, s?.protocol])).toEqual(Either.right(["http://b:4318/custom", "http/json"]))
  })
  test("every mistake named at once", async () => {
    const r = await withEnv(otlpSettings, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_BSP_SCHEDULE_DELAY: "0"
    })
    expect(Either.isLeft(r) ? r.left : "").toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL "grpc" is not supported (http/protobuf or http/json); the OTLP endpoint must be an http:// or https:// URL; OTEL_BSP_SCHEDULE_DELAY must be a positive number of milliseconds'
    )
  })
  test("OTEL_SDK_DISABLED turns export off", async () => {
    expect(await withEnv(otlpSettings, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_SDK_DISABLED: "true" })).toEqual(
      Either.right(undefined)
    )
  })
})

describe("traceparent", () => {
  test("a valid value is a parent; malformed, upper-case or all-zero ids are not", () => {
    const p = parseTraceParent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    expect(p).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true })
    expect(formatTraceParent(p!)).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    for (const bad of [
      null,
      "",
      "garbage",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
      `00-${"0".repeat(32)}-b7ad6b7169203331-01`,
      "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    ]) {
      expect(parseTraceParent(bad)).toBeUndefined()
    }
  })
})

describe("log lines", () => {
  const render = (format: "json" | "pretty") => {
    const lines: Array<string> = []
    const logger = Logger.map(lineLogger(format), (l) => void lines.push(l))
    Effect.runSync(
      Effect.logInfo("job settled").pipe(
        Effect.annotateLogs({ jobId: "j1", status: "completed", note: "two words" }),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
    )
    return lines[0] ?? ""
  }
  test("json: one object per line with time, level, msg and the annotations", () => {
    expect(JSON.parse(render("json"))).toMatchObject({
      level: "info",
      msg: "job settled",
      jobId: "j1",
      status: "completed",
      note: "two words"
    })
  })
  test("pretty: one human line", () => {
    expect(render("pretty")).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  job settled jobId=j1 status=completed note="two words"$/)
  })
  test("fields passed with the message (LogFields) are written as annotations, not in msg", () => {
    const lines: Array<string> = []
    for (const format of ["json", "pretty"] as const) {
      const logger = Logger.map(lineLogger(format), (l) => void lines.push(l))
      Effect.runSync(
        Effect.logInfo("http request", new LogFields({ route: "/api/x", status: 200 })).pipe(
          Effect.annotateLogs({ jobId: "j1" }),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
      )
    }
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ level: "info", msg: "http request", jobId: "j1", route: "/api/x", status: 200 })
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  http request jobId=j1 route=\/api\/x status=200$/)
  })
  test("KINTSUGI_LOG_FORMAT: json or pretty; another value is refused, naming it", async () => {
    expect(await withEnv(logFormat, { KINTSUGI_LOG_FORMAT: "pretty" })).toEqual(Either.right("pretty"))
    const bad = await withEnv(logFormat, { KINTSUGI_LOG_FORMAT: "xml" })
    expect(Either.isLeft(bad) ? bad.left.message : "").toBe('KINTSUGI_LOG_FORMAT must be json or pretty, not "xml"')
  })
})

describe("metrics text", () => {
  test("counters, histograms and the jobs gauge in the Prometheus format; label values escaped", async () => {
    const m = makeMetrics()
    await Effect.runPromise(
      m.jobSettled({
        status: "completed",
        reason: null,
        seconds: 12,
        usage: { model: 'gw/"m"', inputTokens: 10, outputTokens: 2, cacheReadTokens: 1, cacheWriteTokens: 0, costUsd: 0.5 }
      })
    )
    await Effect.runPromise(m.httpRequest({ method: "GET", route: "/api/jobs/:id", status: 200, seconds: 0.02 }))
    const text = await Effect.runPromise(m.render({ queued: 1, running: 0, completed: 1, failed: 0 }))
    expect(text).toContain('kintsugi_jobs{status="queued"} 1\n')
    expect(text).toContain('kintsugi_jobs_settled_total{status="completed",reason=""} 1\n')
    expect(text).toContain('kintsugi_job_duration_seconds_bucket{status="completed",le="5"} 0\n')
    expect(text).toContain('kintsugi_job_duration_seconds_bucket{status="completed",le="15"} 1\n')
    expect(text).toContain('kintsugi_job_duration_seconds_bucket{status="completed",le="+Inf"} 1\n')
    expect(text).toContain('kintsugi_job_duration_seconds_sum{status="completed"} 12\n')
    expect(text).toContain('kintsugi_tokens_total{model="gw/\\"m\\"",type="cache_read"} 1\n')
    expect(text).toContain('kintsugi_cost_usd_total{model="gw/\\"m\\""} 0.5\n')
    expect(text).toContain('kintsugi_http_requests_total{method="GET",route="/api/jobs/:id",status="200"} 1\n')
    // Every sample line is `name{labels} value` or a # HELP/# TYPE line.
    for (const line of text.trimEnd().split("\n"))
      expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{.*\})? -?[\d.e+-]+|\w+(\{.*\})? [+-]Inf)$/)
  })
})
