/**
 * A scripted search backend on 127.0.0.1 that answers like SearXNG (`/search?format=json`) and like
 * Brave Search (`/res/v1/web/search`, key in `X-Subscription-Token`), recording every request; and
 * scripted web pages on the same server (`/pages/...`).
 */
export interface BackendHit {
  readonly path: string
  readonly query: string | null
  readonly headers: Record<string, string>
}

export interface ScriptedWeb {
  readonly url: string
  readonly hits: Array<BackendHit>
  /** Requests to the search API only (pages excluded). */
  readonly searches: () => ReadonlyArray<BackendHit>
  readonly stop: () => void
}

export const BRAVE_KEY = "brave-key-CANARY-5e1f0a9b"

export const startScriptedWeb = (): ScriptedWeb => {
  const hits: Array<BackendHit> = []
  const results = (q: string) =>
    Array.from({ length: 12 }, (_, i) => ({
      title: `Result ${i + 1} for ${q}`,
      url: `https://docs.example.com/${i + 1}`,
      snippet: `<strong>${q}</strong> &amp; more ${i + 1}`
    }))
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => {
      const url = new URL(r.url)
      hits.push({ path: url.pathname, query: url.searchParams.get("q"), headers: Object.fromEntries(r.headers.entries()) })
      const q = url.searchParams.get("q") ?? ""
      if (url.pathname === "/search" && url.searchParams.get("format") === "json") {
        return Response.json({ query: q, results: results(q).map((x) => ({ title: x.title, url: x.url, content: x.snippet })) })
      }
      if (url.pathname === "/res/v1/web/search") {
        if (r.headers.get("x-subscription-token") !== BRAVE_KEY) return Response.json({ error: "unauthorized" }, { status: 401 })
        const count = Number(url.searchParams.get("count") ?? "20")
        return Response.json({
          web: {
            results: results(q)
              .slice(0, count)
              .map((x) => ({ title: x.title, url: x.url, description: x.snippet }))
          }
        })
      }
      if (url.pathname === "/pages/reference") {
        return new Response(
          "<html><head><title>Effect reference</title></head><body><h1>Layers</h1><p>A Layer builds services.</p></body></html>",
          {
            headers: { "content-type": "text/html; charset=utf-8" }
          }
        )
      }
      if (url.pathname === "/pages/long") {
        const lines = Array.from({ length: 5000 }, (_, i) => `<p>Paragraph ${i + 1} of a long public reference page.</p>`).join("")
        return new Response(`<html><body>${lines}</body></html>`, { headers: { "content-type": "text/html" } })
      }
      if (url.pathname === "/pages/to-private") return new Response(null, { status: 302, headers: { location: "http://10.1.1.1/" } })
      return new Response("not found", { status: 404 })
    }
  })
  const base = `http://127.0.0.1:${server.port}`
  return {
    url: base,
    hits,
    searches: () => hits.filter((h) => h.path === "/search" || h.path === "/res/v1/web/search"),
    stop: () => void server.stop(true)
  }
}
