/**
 * A request with more than one Host header is 400 at the edge (RFC 9112 §3.2), over a real socket:
 * Bun joins repeated Host headers into one value, which the edge tells from a single Host.
 */
import { afterAll, expect, test } from "bun:test"
import { withEdge } from "../../src/http/edge.ts"

const edge = withEdge({ handle: async () => new Response("answered") }, { allowedHosts: ["localhost", "127.0.0.1"] })
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => edge(request) })
afterAll(() => server.stop(true))

/** One raw HTTP/1.1 request; resolves to the whole response text once the server closes the connection. */
const raw = (head: string): Promise<string> =>
  new Promise((resolve, reject) => {
    let text = ""
    Bun.connect({
      hostname: "127.0.0.1",
      port: server.port!,
      socket: {
        open: (s) => void s.write(`${head}Connection: close\r\n\r\n`),
        data: (_s, d) => void (text += new TextDecoder().decode(d)),
        close: () => resolve(text),
        error: (_s, e) => reject(e)
      }
    }).catch(reject)
  })

const statusOf = (response: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1])

test("two Host headers, equal or not, are 400 with a message saying so, on every path", async () => {
  for (const [path, hosts] of [
    ["/api/session", ["localhost", "localhost"]],
    ["/sign-in", ["localhost", "evil.example"]],
    ["/healthz", ["127.0.0.1", "localhost"]]
  ] as const) {
    const response = await raw(`GET ${path} HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join("")}`)
    expect({ path, status: statusOf(response) }).toEqual({ path, status: 400 })
    expect(response).toContain("more than one Host header")
  }
})

test("one Host header is answered as before", async () => {
  expect(statusOf(await raw("GET /api/session HTTP/1.1\r\nHost: localhost\r\n"))).toBe(200)
  expect(statusOf(await raw("GET /api/session HTTP/1.1\r\nHost: evil.example\r\n"))).toBe(421)
})
