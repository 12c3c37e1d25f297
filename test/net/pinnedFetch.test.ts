/**
 * The connect-time check: one DNS answer, checked, and the connection pinned to it (a resolver that
 * changes its answer cannot redirect the request); Host and TLS server name kept; redirects not followed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pinnedFetch, UrlRefused } from "../../src/net/pinnedFetch.ts"

setDefaultTimeout(30_000)

interface Hit {
  readonly host: string | null
  readonly path: string
}

/** A plain HTTP server on one loopback address that records every request it gets. */
const recorder = (hostname: string) => {
  const hits: Array<Hit> = []
  const server = Bun.serve({
    hostname,
    port: 0,
    fetch: (r) => {
      const url = new URL(r.url)
      hits.push({ host: r.headers.get("host"), path: url.pathname })
      return url.pathname === "/redirect"
        ? new Response(null, { status: 302, headers: { location: "http://127.0.0.1:1/" } })
        : new Response(`hello from ${hostname}`)
    }
  })
  return { hits, server, port: server.port }
}

/** A resolver whose answers come from `answers`, one per call (the last one repeats); counts its calls. */
const changingResolver = (answers: ReadonlyArray<ReadonlyArray<string>>) => {
  const calls: Array<string> = []
  const resolve = async (host: string) => {
    calls.push(host)
    return answers[Math.min(calls.length - 1, answers.length - 1)]!
  }
  return { calls, resolve }
}

// Linux routes all of 127/8 to loopback: 127.0.0.2 is the address the policy checked, 127.0.0.1 the rebind target.
let checked: ReturnType<typeof recorder>
let rebound: ReturnType<typeof recorder>
beforeAll(() => {
  checked = recorder("127.0.0.2")
  rebound = recorder("127.0.0.1")
})
afterAll(() => {
  checked.server.stop(true)
  rebound.server.stop(true)
})

describe("pinnedFetch", () => {
  test("a rebinding resolver (checked address first, another later) cannot redirect the connection", async () => {
    const dns = changingResolver([["127.0.0.2"], ["127.0.0.1"]])
    const url = `http://mcp.example.test:${checked.port}/mcp`
    const r = await pinnedFetch(url, {}, { allowPrivateNetwork: true, resolve: dns.resolve })
    expect(await r.text()).toBe("hello from 127.0.0.2")
    // Resolved exactly once; the second (rebound) answer was never asked for, let alone used.
    expect(dns.calls).toEqual(["mcp.example.test"])
    expect(checked.hits).toEqual([{ host: `mcp.example.test:${checked.port}`, path: "/mcp" }])
    expect(rebound.hits).toEqual([])
  })

  test("a public answer at check time and 127.0.0.1 afterwards never reaches the local server", async () => {
    const before = rebound.hits.length
    const abort = new AbortController()
    // The public address is not contacted either: the request is aborted as soon as the check has resolved.
    const dns = changingResolver([["93.184.215.14"], ["127.0.0.1"]])
    const resolve = async (host: string) => {
      const answer = await dns.resolve(host)
      abort.abort()
      return answer
    }
    const error = await pinnedFetch(
      `http://rebind.example.test:${rebound.port}/`,
      { signal: abort.signal },
      { allowPrivateNetwork: false, resolve }
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe("AbortError")
    expect(dns.calls).toEqual(["rebind.example.test"])
    expect(rebound.hits.length).toBe(before)
  })

  test("a private answer at connect time is refused before connecting, whatever it answered at save time", async () => {
    const before = rebound.hits.length
    const dns = changingResolver([["127.0.0.1"]])
    const error = await pinnedFetch(
      `http://evil.example.test:${rebound.port}/`,
      {},
      { allowPrivateNetwork: false, resolve: dns.resolve }
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UrlRefused)
    expect((error as UrlRefused).message).toContain("127.0.0.1 is a loopback address")
    expect(rebound.hits.length).toBe(before)
  })

  test("a DNS answer mixing public and private addresses is refused", async () => {
    const dns = changingResolver([["93.184.215.14", "127.0.0.1"]])
    const error = await pinnedFetch(
      `http://mixed.example.test:${rebound.port}/`,
      {},
      { allowPrivateNetwork: false, resolve: dns.resolve }
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UrlRefused)
    expect((error as UrlRefused).problem).toContain("127.0.0.1 is a loopback address")
  })

  test("redirects are never followed; an embedded loopback literal is refused without DNS", async () => {
    const dns = changingResolver([["127.0.0.2"]])
    const r = await pinnedFetch(
      `http://mcp.example.test:${checked.port}/redirect`,
      { redirect: "follow" },
      { allowPrivateNetwork: true, resolve: dns.resolve }
    )
    expect(r.status).toBe(302)
    expect(r.headers.get("location")).toBe("http://127.0.0.1:1/")
    const refused = await pinnedFetch(
      `http://[::ffff:7f00:1]:${rebound.port}/`,
      {},
      { allowPrivateNetwork: false, resolve: dns.resolve }
    ).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(UrlRefused)
    expect(dns.calls).toEqual(["mcp.example.test"])
  })
})

// A certificate for mcp.test made by openssl; without openssl the https case cannot be set up here.
const openssl = Bun.which("openssl")
describe.skipIf(openssl === null)(
  `pinnedFetch over https${openssl === null ? " (skipped: openssl not found to make a test certificate)" : ""}`,
  () => {
    let dir = ""
    let cert = ""
    let server: Server
    let port = 0
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "pinned-tls-"))
      const made = Bun.spawnSync(
        [
          openssl!,
          "req",
          "-x509",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
          "-days",
          "2",
          "-subj",
          "/CN=mcp.test",
          "-addext",
          "subjectAltName=DNS:mcp.test"
        ],
        { stderr: "pipe" }
      )
      if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
      cert = await Bun.file(join(dir, "cert.pem")).text()
      const key = await Bun.file(join(dir, "key.pem")).text()
      server = createServer({ key, cert }, (req, res) => {
        const servername = (req.socket as { servername?: string | false }).servername
        res.end(JSON.stringify({ sni: servername ?? null, host: req.headers.host ?? null }))
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve))
      const address = server.address()
      port = typeof address === "object" && address !== null ? address.port : 0
    })
    afterAll(() => {
      server?.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test("the connection goes to the checked address with the host name as SNI, certificate name and Host", async () => {
      const dns = changingResolver([["127.0.0.2"], ["127.0.0.1"]])
      const r = await pinnedFetch(
        `https://mcp.test:${port}/mcp`,
        { tls: { ca: cert } },
        { allowPrivateNetwork: true, resolve: dns.resolve }
      )
      expect(await r.json()).toEqual({ sni: "mcp.test", host: `mcp.test:${port}` })
      expect(dns.calls).toEqual(["mcp.test"])
    })

    test("a certificate for another name is refused (the check uses the URL's host, not the address)", async () => {
      const dns = changingResolver([["127.0.0.2"]])
      const error = await pinnedFetch(
        `https://other.test:${port}/mcp`,
        { tls: { ca: cert } },
        { allowPrivateNetwork: true, resolve: dns.resolve }
      ).catch((e: unknown) => e)
      expect(String(error)).toContain("ERR_TLS_CERT_ALTNAME_INVALID")
    })
  }
)
