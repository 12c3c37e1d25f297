/**
 * `kintsugi serve`: the HTTP entry. Until the Agent Builder portal lands (issue 5) it serves a
 * status page and `/healthz`.
 */
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Kintsugi Runtime</title></head>
<body><main><h1>Kintsugi Runtime</h1>
<p>The agent kernel is running. The Agent Builder portal is not built yet.</p>
<p>Run a job: <code>bun src/cli.ts run-job &lt; envelope.json</code></p></main></body></html>`

export const serveMain = async (): Promise<void> => {
  const port = Number(process.env["PORT"] ?? 7777)
  const hostname = process.env["HOST"] ?? "127.0.0.1"
  const server = Bun.serve({
    port,
    hostname,
    fetch: (req) => {
      const { pathname } = new URL(req.url)
      if (pathname === "/healthz") return new Response("ok\n", { headers: { "content-type": "text/plain" } })
      if (pathname === "/") {
        return new Response(page, {
          headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": "default-src 'none'" }
        })
      }
      return new Response("not found\n", { status: 404, headers: { "content-type": "text/plain" } })
    }
  })
  process.stdout.write(`kintsugi: serving on http://${server.hostname}:${server.port}\n`)
}
