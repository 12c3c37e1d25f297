/**
 * The SSE clients of bench/sse.ts, run as a Worker (its own thread and event loop, as clients in other
 * processes would be): opens event streams, reads them as they arrive, and keeps each
 * `message.delta`'s lag (its text is the wall-clock ms at which it was stored; now minus that).
 */
declare const self: Worker

export type ClientRequest =
  | { readonly type: "open"; readonly urls: ReadonlyArray<string>; readonly headers: Record<string, string> }
  | { readonly type: "collect" }
  | { readonly type: "close" }

export type ClientReply =
  | { readonly type: "opened"; readonly streams: number }
  | { readonly type: "lags"; readonly lags: ReadonlyArray<number> }
  | { readonly type: "closed" }
  | { readonly type: "error"; readonly message: string }

const now = () => performance.timeOrigin + performance.now()
const readers: Array<{ readonly cancel: () => Promise<void> }> = []
let lags: Array<number> = []

const follow = async (url: string, headers: Record<string, string>): Promise<void> => {
  const response = await fetch(url, { headers })
  if (response.status !== 200 || response.body === null) throw new Error(`${url}: ${response.status}`)
  const reader = response.body.getReader()
  readers.push(reader)
  const decoder = new TextDecoder()
  let buffer = ""
  // The first chunk (`retry:` and a comment) says the stream is open.
  const first = await reader.read()
  buffer += decoder.decode(first.value ?? new Uint8Array(), { stream: true })
  void (async () => {
    for (;;) {
      const frames = buffer.split("\n\n")
      buffer = frames.pop() ?? ""
      for (const frame of frames) {
        if (!frame.includes("event: message.delta")) continue
        const data = frame.split("\n").find((l) => l.startsWith("data: "))
        if (data !== undefined) lags.push(now() - Number((JSON.parse(data.slice(6)) as { text: string }).text))
      }
      const next = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (next.done === true) return
      buffer += decoder.decode(next.value, { stream: true })
    }
  })()
}

self.onmessage = (event: MessageEvent<ClientRequest>) => {
  const request = event.data
  const reply = (r: ClientReply) => self.postMessage(r)
  if (request.type === "open") {
    Promise.all(request.urls.map((u) => follow(u, request.headers))).then(
      () => reply({ type: "opened", streams: readers.length }),
      (e: unknown) => reply({ type: "error", message: String(e) })
    )
  } else if (request.type === "collect") {
    reply({ type: "lags", lags })
    lags = []
  } else {
    Promise.all(readers.splice(0).map((r) => r.cancel().catch(() => undefined))).then(() => reply({ type: "closed" }))
  }
}
