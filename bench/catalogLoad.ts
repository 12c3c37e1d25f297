/**
 * The load generator of bench/catalog.ts, run as a Worker (its own thread and event loop): the server
 * under test does not share its event loop with the 32 clients' fetches and body reads, as real clients
 * in other processes would not. Posts back every request's latency (ms) and the last body's size.
 */
declare const self: Worker

export interface LoadRequest {
  readonly base: string
  /** A fixed path, or `search`: a page of 50 whose query differs on every request. */
  readonly path: string | { readonly search: true }
  readonly total: number
  readonly clients: number
  readonly headers: Record<string, string>
  readonly status: number
}

export interface LoadResult {
  readonly latencies: ReadonlyArray<number>
  readonly seconds: number
  readonly bytes: number
  readonly error?: string
}

const run = async (req: LoadRequest): Promise<LoadResult> => {
  const latencies: Array<number> = []
  let next = 0
  let bytes = 0
  const pathOf = (i: number) =>
    typeof req.path === "string" ? req.path : `/api/admin/agents?limit=50&q=agent+${i % 2 === 0 ? "number" : "benchmark"}+${i}`
  const client = async () => {
    while (next < req.total) {
      const url = pathOf(next)
      next++
      const t0 = performance.now()
      const r = await fetch(`${req.base}${url}`, { headers: req.headers })
      const body = await r.arrayBuffer()
      latencies.push(performance.now() - t0)
      if (r.status !== req.status) throw new Error(`${url}: ${r.status} ${new TextDecoder().decode(body).slice(0, 200)}`)
      bytes = body.byteLength
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: req.clients }, client))
  return { latencies, seconds: (performance.now() - t0) / 1000, bytes }
}

self.onmessage = (event: MessageEvent<LoadRequest>) => {
  run(event.data).then(
    (result) => self.postMessage(result),
    (e: unknown) =>
      self.postMessage({ latencies: [], seconds: 0, bytes: 0, error: e instanceof Error ? e.message : String(e) } satisfies LoadResult)
  )
}
