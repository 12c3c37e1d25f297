/**
 * Request bodies are capped before anything else, measured from outside: a server process (served as
 * `kintsugi serve` serves) gets 40 MiB chunked bodies (no Content-Length) on the API and the portal,
 * and its resident memory (VmRSS of /proc/<pid>/status) must not grow by the body's size.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"

setDefaultTimeout(120_000)

const MIB = 1024 * 1024
/** What one 40 MiB body may add to the server's RSS at most (the bar). */
const MAX_GROWTH_MB = 50

let server: ReturnType<typeof Bun.spawn> | undefined
let base = ""
let token = ""

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024

beforeAll(async () => {
  const child = Bun.spawn(["bun", join(import.meta.dir, "..", "support", "edgeServer.ts")], { stdout: "pipe", stderr: "inherit" })
  server = child
  const reader = child.stdout.getReader()
  let out = ""
  while (!out.includes("\n")) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the server process ended before listening: ${out}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  const [ready, port, adminToken] = out.trim().split(" ")
  if (ready !== "READY" || port === undefined || adminToken === undefined) throw new Error(`unexpected first line: ${out}`)
  base = `http://127.0.0.1:${port}`
  token = adminToken
  expect((await fetch(`${base}/healthz`)).status).toBe(200)
}, 120_000)

afterAll(async () => {
  server?.kill("SIGTERM")
  await server?.exited
})

/** POSTs `mib` MiB as a chunked stream (1 MiB chunks, produced only as the server reads them). */
const postChunked = async (path: string, mib: number, headers: Record<string, string>) => {
  let sent = 0
  const chunk = new Uint8Array(MIB).fill(0x61)
  const body = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (sent >= mib) return controller.close()
      sent++
      controller.enqueue(chunk)
    }
  })
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    body,
    headers: { host: new URL(base).host, ...headers },
    duplex: "half"
  } as RequestInit)
  return { status: r.status, text: await r.text(), nosniff: r.headers.get("x-content-type-options"), sentMib: sent }
}

describe("a 40 MiB chunked body is never buffered", () => {
  const pid = () => {
    if (server === undefined) throw new Error("no server")
    return server.pid
  }

  test("unauthenticated, on the API and the portal: refused (401 without reading it, 413 past the sign-in cap), RSS grows < 50 MB", async () => {
    const cases: ReadonlyArray<readonly [string, Record<string, string>, number]> = [
      ["/api/jobs", { "content-type": "application/json" }, 401],
      ["/api/admin/agents", { "content-type": "application/json", authorization: "Bearer kt_not-a-token" }, 401],
      ["/api/session", { "content-type": "application/json" }, 413],
      ["/sign-in", { "content-type": "application/x-www-form-urlencoded" }, 413],
      ["/agents/-/import", { "content-type": "multipart/form-data; boundary=x", cookie: "__Host-kintsugi-session=forged" }, 401],
      ["/agent-skills", { "content-type": "application/x-www-form-urlencoded", cookie: "__Host-kintsugi-session=forged" }, 401]
    ]
    const start = rssMb(pid())
    const seen: Array<unknown> = []
    for (const [path, headers] of cases) {
      const before = rssMb(pid())
      const r = await postChunked(path, 40, headers)
      const growth = rssMb(pid()) - before
      if (process.env["EDGE_DEBUG"]) console.log(path, r.status, r.sentMib, growth.toFixed(1))
      seen.push({ path, status: r.status, nosniff: r.nosniff, grewLessThan50Mb: growth < MAX_GROWTH_MB, readAll: r.sentMib >= 40 })
    }
    expect(seen).toEqual(cases.map(([path, , status]) => ({ path, status, nosniff: "nosniff", grewLessThan50Mb: true, readAll: false })))
    // All six together, too: nothing of them stays resident.
    expect(rssMb(pid()) - start).toBeLessThan(MAX_GROWTH_MB)
  })

  test("the sign-in refusal names the cap", async () => {
    const r = await postChunked("/api/session", 1, { "content-type": "application/json" })
    expect(r.status).toBe(413)
    expect(JSON.parse(r.text)).toEqual({
      error: { code: "payload-too-large", message: "the request body is larger than the limit of 65536 bytes" }
    })
  })

  test("authenticated: 40 MiB to an admin route stops at the 16 MiB cap with 413, RSS grows < 50 MB", async () => {
    const before = rssMb(pid())
    const r = await postChunked("/api/admin/agents", 40, { "content-type": "application/json", authorization: `Bearer ${token}` })
    if (process.env["EDGE_DEBUG"]) console.log("auth", r.status, r.sentMib, r.text, (rssMb(pid()) - before).toFixed(1))
    expect(r.status).toBe(413)
    expect(JSON.parse(r.text).error.message).toBe("the request body is larger than the limit of 16777216 bytes")
    expect(r.sentMib).toBeLessThan(40)
    expect(rssMb(pid()) - before).toBeLessThan(MAX_GROWTH_MB)
  })

  test("a declared Content-Length over the cap is refused before any of it is read", async () => {
    const r = await fetch(`${base}/api/admin/agents`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: new Uint8Array(16 * MIB + 1)
    })
    expect(r.status).toBe(413)
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("payload-too-large")
  })
})
