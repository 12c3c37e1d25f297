/**
 * The scripted model servers on a port the test chooses (`port`), for a provider config written before
 * the server starts; without it they take a free port.
 */
import { afterEach, expect, test } from "bun:test"
import { startAnthropicServer, startOpenAIServer, type ScriptedServer } from "kintsugi-runtime/testing"

const servers: Array<ScriptedServer> = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop()
})

/** A port nothing listens on now: one the system handed out and that was closed again. */
const freePort = (): number => {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

test("both servers listen on the given port and answer there", async () => {
  for (const start of [startOpenAIServer, startAnthropicServer]) {
    const port = freePort()
    const server = await start([{ kind: "turn", text: "hi" }], { port, models: ["m"] })
    servers.push(server)
    expect(new URL(server.baseUrl).port).toBe(String(port))
    expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(200)
  }
})

test("without a port each server takes a free one", async () => {
  const [a, b] = [await startOpenAIServer([]), await startOpenAIServer([])]
  servers.push(a, b)
  expect(new URL(a.baseUrl).port).not.toBe(new URL(b.baseUrl).port)
})
