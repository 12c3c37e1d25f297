/**
 * The server's metrics in the Prometheus text format: counters and histograms of this process (jobs
 * its workers settled, their durations, tokens and cost; HTTP requests), plus the jobs by status of the
 * whole database as a gauge. Labels are bounded: statuses, reasons, configured model names, routes.
 */
import { Context, Effect, Layer } from "effect"

export interface JobSettledSample {
  readonly status: "completed" | "failed"
  readonly reason: string | null
  readonly seconds: number
  /** The job's final usage totals (its last `usage` event), when it had any. */
  readonly usage?: {
    readonly model: string
    readonly inputTokens: number
    readonly outputTokens: number
    readonly cacheReadTokens: number
    readonly cacheWriteTokens: number
    readonly costUsd: number
  }
  /** The job's grounding check (its `grounding` event), when it was checked. */
  readonly grounding?: { readonly grounded: number; readonly ungrounded: number; readonly unknown: number }
}

export interface HttpSample {
  readonly method: string
  /** The route pattern (`/api/jobs/:id`), never the raw path: paths carry ids and would not stay bounded. */
  readonly route: string
  readonly status: number
  readonly seconds: number
}

export class Metrics extends Context.Tag("telemetry/Metrics")<
  Metrics,
  {
    /** Counts a job settled by this process's worker. Never fails. */
    readonly jobSettled: (sample: JobSettledSample) => Effect.Effect<void>
    /** Counts one answered HTTP request. Never fails. */
    readonly httpRequest: (sample: HttpSample) => Effect.Effect<void>
    /** The exposition text; `jobsByStatus` is the database's count per status, shown as a gauge. */
    readonly render: (jobsByStatus: Readonly<Record<string, number>>) => Effect.Effect<string>
  }
>() {}

const JOB_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600]
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
const labelText = (labels: Readonly<Record<string, string>>) => {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`)
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`
}
const num = (n: number) => (Number.isFinite(n) ? String(n) : n > 0 ? "+Inf" : n < 0 ? "-Inf" : "NaN")

/** A family of series keyed by their label set. */
class Family<V> {
  readonly series = new Map<string, { labels: Record<string, string>; value: V }>()
  constructor(private readonly init: () => V) {}
  get(labels: Record<string, string>): V {
    // The values alone name a series (a family's label names are fixed): no escaping on the hot path
    // (every HTTP request); a value holding the separator falls back to the escaped form.
    const values = Object.values(labels)
    const key = values.some((v) => v.includes("\u0000")) ? labelText(labels) : values.join("\u0000")
    let s = this.series.get(key)
    if (s === undefined) this.series.set(key, (s = { labels, value: this.init() }))
    return s.value
  }
}

interface Histogram {
  readonly counts: Array<number>
  sum: number
  count: number
}

const observe = (h: Histogram, buckets: ReadonlyArray<number>, v: number) => {
  buckets.forEach((b, i) => {
    if (v <= b) h.counts[i]! += 1
  })
  h.sum += v
  h.count += 1
}

export const makeMetrics = (): Metrics["Type"] => {
  const settled = new Family(() => ({ n: 0 }))
  const durations = new Family<Histogram>(() => ({ counts: JOB_BUCKETS.map(() => 0), sum: 0, count: 0 }))
  const tokens = new Family(() => ({ n: 0 }))
  const cost = new Family(() => ({ n: 0 }))
  const citations = new Family(() => ({ n: 0 }))
  const requests = new Family(() => ({ n: 0 }))
  const latency = new Family<Histogram>(() => ({ counts: HTTP_BUCKETS.map(() => 0), sum: 0, count: 0 }))

  const counter = (name: string, help: string, family: Family<{ n: number }>) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} counter`,
    ...[...family.series.values()].map((s) => `${name}${labelText(s.labels)} ${num(s.value.n)}`)
  ]
  const histogram = (name: string, help: string, family: Family<Histogram>, buckets: ReadonlyArray<number>) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} histogram`,
    ...[...family.series.values()].flatMap((s) => [
      ...buckets.map((b, i) => `${name}_bucket${labelText({ ...s.labels, le: String(b) })} ${s.value.counts[i]}`),
      `${name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.value.count}`,
      `${name}_sum${labelText(s.labels)} ${num(s.value.sum)}`,
      `${name}_count${labelText(s.labels)} ${s.value.count}`
    ])
  ]

  return {
    jobSettled: (j) =>
      Effect.sync(() => {
        settled.get({ status: j.status, reason: j.reason ?? "" }).n += 1
        observe(durations.get({ status: j.status }), JOB_BUCKETS, j.seconds)
        if (j.grounding !== undefined) {
          citations.get({ status: "grounded" }).n += j.grounding.grounded
          citations.get({ status: "ungrounded" }).n += j.grounding.ungrounded
          citations.get({ status: "unknown" }).n += j.grounding.unknown
        }
        if (j.usage === undefined) return
        const model = j.usage.model
        tokens.get({ model, type: "input" }).n += j.usage.inputTokens
        tokens.get({ model, type: "output" }).n += j.usage.outputTokens
        tokens.get({ model, type: "cache_read" }).n += j.usage.cacheReadTokens
        tokens.get({ model, type: "cache_write" }).n += j.usage.cacheWriteTokens
        cost.get({ model }).n += j.usage.costUsd
      }),
    httpRequest: (r) =>
      Effect.sync(() => {
        requests.get({ method: r.method, route: r.route, status: String(r.status) }).n += 1
        observe(latency.get({ method: r.method }), HTTP_BUCKETS, r.seconds)
      }),
    render: (jobsByStatus) =>
      Effect.sync(() =>
        [
          "# HELP kintsugi_jobs Jobs in the database by status (all serve processes).",
          "# TYPE kintsugi_jobs gauge",
          ...Object.entries(jobsByStatus).map(([status, n]) => `kintsugi_jobs${labelText({ status })} ${n}`),
          ...counter("kintsugi_jobs_settled_total", "Jobs settled by this process's workers, by status and failure reason.", settled),
          ...histogram(
            "kintsugi_job_duration_seconds",
            "Run time of the jobs this process settled, from claim to settlement.",
            durations,
            JOB_BUCKETS
          ),
          ...counter("kintsugi_tokens_total", "Model tokens of the jobs this process settled, by model and type.", tokens),
          ...counter("kintsugi_cost_usd_total", "Model cost in US dollars of the jobs this process settled, by model.", cost),
          ...counter(
            "kintsugi_grounding_citations_total",
            "Line citations in the outputs of the jobs this process settled, by grounding status.",
            citations
          ),
          ...counter("kintsugi_http_requests_total", "HTTP requests answered, by method, route and status.", requests),
          ...histogram("kintsugi_http_request_duration_seconds", "HTTP request handling time, by method.", latency, HTTP_BUCKETS),
          ""
        ].join("\n")
      )
  }
}

export const MetricsLive = Layer.sync(Metrics, makeMetrics)
