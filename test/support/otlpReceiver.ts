/**
 * A tiny OTLP/HTTP trace receiver on 127.0.0.1 for tests: accepts JSON export requests on /v1/traces,
 * keeps every raw body (for leak checks) and the spans, and lets a test await a span by predicate.
 */

export interface OtlpAttribute {
  readonly key: string
  readonly value: {
    readonly stringValue?: string
    readonly intValue?: string | number
    readonly doubleValue?: number
    readonly boolValue?: boolean
  }
}

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<OtlpAttribute>
  readonly events?: ReadonlyArray<{ readonly name: string; readonly attributes?: ReadonlyArray<OtlpAttribute> }>
  readonly status?: { readonly code?: number; readonly message?: string }
}

export interface OtlpReceiver {
  readonly endpoint: string
  readonly spans: Array<OtlpSpan>
  /** Every request body as received (JSON text). */
  readonly bodies: Array<string>
  readonly contentTypes: Array<string>
  /** Resolves with the first span (already received or arriving later) that `test` accepts. */
  readonly waitFor: (test: (span: OtlpSpan) => boolean) => Promise<OtlpSpan>
  readonly stop: () => Promise<void>
}

/** The value of attribute `key` of `span`, as a string, number or boolean. */
export const attr = (span: Pick<OtlpSpan, "attributes">, key: string): string | number | boolean | undefined => {
  const v = span.attributes.find((a) => a.key === key)?.value
  if (v === undefined) return undefined
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.doubleValue !== undefined) return v.doubleValue
  return v.boolValue
}

export const startOtlpReceiver = (): OtlpReceiver => {
  const spans: Array<OtlpSpan> = []
  const bodies: Array<string> = []
  const contentTypes: Array<string> = []
  const waiters: Array<{ test: (s: OtlpSpan) => boolean; resolve: (s: OtlpSpan) => void }> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/v1/traces") return new Response("not found", { status: 404 })
      const text = await request.text()
      bodies.push(text)
      contentTypes.push(request.headers.get("content-type") ?? "")
      const body = JSON.parse(text) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<OtlpSpan> }> }> }
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const span of ss.spans ?? []) {
            spans.push(span)
            for (const w of [...waiters]) {
              if (w.test(span)) {
                waiters.splice(waiters.indexOf(w), 1)
                w.resolve(span)
              }
            }
          }
      return Response.json({})
    }
  })
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    spans,
    bodies,
    contentTypes,
    waitFor: (test) => {
      const found = spans.find(test)
      return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ test, resolve }))
    },
    stop: () => server.stop(true)
  }
}
