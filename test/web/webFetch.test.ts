/**
 * The web_fetch boundary against scripted pages on 127.0.0.1 (reachable only with the tests' loopback
 * allowance): every refusal names its rule; addresses are checked after DNS and after every redirect.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Either } from "effect"
import {
  fetchPage,
  WEB_FETCH_MAX_BYTES,
  WEB_FETCH_MAX_REDIRECTS,
  WEB_FETCH_TIMEOUT_MS,
  WEB_USER_AGENT,
  type WebFetchOptions
} from "../../src/web/webFetch.ts"

setDefaultTimeout(30_000)

interface Seen {
  readonly path: string
  readonly headers: Record<string, string>
}
const seen: Array<Seen> = []
let server: ReturnType<typeof Bun.serve>
let base = ""

/** One byte, then nothing more until the reader gives up: a body that never ends. */
const slowDrip = () => {
  let sent = false
  let cancelled: () => void = () => {}
  const gone = new Promise<void>((resolve) => (cancelled = resolve))
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent) return gone
      sent = true
      controller.enqueue(new TextEncoder().encode("."))
    },
    cancel: () => cancelled()
  })
}

/** 50 MB, generated lazily in 64 KB chunks and without a Content-Length. */
const fiftyMegabytes = () => {
  let sent = 0
  const chunk = new Uint8Array(64 * 1024).fill(97)
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= 50 * 1024 * 1024) return controller.close()
      sent += chunk.byteLength
      controller.enqueue(chunk)
    }
  })
}

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => {
      const url = new URL(r.url)
      seen.push({ path: url.pathname, headers: Object.fromEntries(r.headers.entries()) })
      const html = (body: string) => new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } })
      switch (url.pathname) {
        case "/page":
          return html(`<html><head><title>A  page</title><script>steal()</script><style>p{}</style></head>
            <body><h1>Reference</h1><p>Effect <a href="https://effect.website/docs">docs</a> say hi.</p><img src="x.png" alt="x"></body></html>`)
        case "/plain":
          return new Response("just text", { headers: { "content-type": "text/plain" } })
        case "/set-cookie":
          return new Response(null, { status: 302, headers: { location: "/echo", "set-cookie": "session=CANARY-cookie; Path=/" } })
        case "/echo":
          return new Response("echo", { headers: { "content-type": "text/plain" } })
        case "/to-private":
          return new Response(null, { status: 302, headers: { location: "http://10.0.0.7/admin" } })
        case "/to-metadata":
          return new Response(null, { status: 301, headers: { location: "http://169.254.169.254/latest/meta-data/" } })
        case "/to-mapped":
          return new Response(null, { status: 307, headers: { location: "http://[::ffff:a9fe:a9fe]/" } })
        case "/loop":
          return new Response(null, { status: 302, headers: { location: `/loop?n=${Number(url.searchParams.get("n") ?? 0) + 1}` } })
        case "/big":
          return new Response(fiftyMegabytes(), { headers: { "content-type": "text/plain" } })
        case "/big-declared":
          return new Response("x".repeat(3 * 1024 * 1024), { headers: { "content-type": "text/plain" } })
        case "/drip":
          return new Response(slowDrip(), { headers: { "content-type": "text/plain" } })
        case "/binary":
          return new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), { headers: { "content-type": "image/png" } })
        case "/octet":
          return new Response("MZ", { headers: { "content-type": "application/octet-stream" } })
        case "/untyped":
          return new Response(new Uint8Array([1, 2, 3]))
        case "/json":
          return new Response('{"a":1}', { headers: { "content-type": "application/ld+json" } })
        case "/missing":
          return new Response("gone", { status: 404, headers: { "content-type": "text/plain" } })
        default:
          return new Response("?", { status: 404 })
      }
    }
  })
  base = `http://127.0.0.1:${server.port}`
})
afterAll(() => server.stop(true))

/** The tests' loopback allowance, and a resolver for names that look public. */
const dns = (map: Record<string, ReadonlyArray<string>>) => async (host: string) => {
  const found = map[host]
  if (found === undefined) throw new Error("ENOTFOUND")
  return found
}
const loopback: WebFetchOptions = { allow: "loopback", resolve: dns({ "docs.example.com": ["127.0.0.1"] }) }
const production: WebFetchOptions = { allow: false, resolve: dns({}) }

const refusal = async (url: string, options: WebFetchOptions = loopback) => {
  const r = await Effect.runPromise(Effect.either(fetchPage(url, options)))
  if (Either.isRight(r)) throw new Error(`${url} was fetched`)
  return { rule: r.left.rule, message: r.left.message }
}

describe("web fetch: pages", () => {
  test("an HTML page becomes text (a library's conversion: no script, no style, links kept); the title is read", async () => {
    const page = await Effect.runPromise(fetchPage(`${base}/page`, loopback))
    expect(page.title).toBe("A page")
    expect(page.text).toContain("Reference")
    expect(page.text).toContain("docs [https://effect.website/docs]")
    expect(page.text).not.toContain("steal")
    expect(page.text).not.toContain("p{}")
    expect(page.mediaType).toBe("text/html")
  })

  test("a public-looking name is resolved, checked and connected to at the checked address; structured JSON types are text", async () => {
    const page = await Effect.runPromise(fetchPage(`http://docs.example.com:${server.port}/json`, loopback))
    expect(page.text).toBe('{"a":1}')
    expect(seen.at(-1)?.headers["host"]).toBe(`docs.example.com:${server.port}`)
  })

  test("a fixed user agent, no cookie (not even one the server set), no credentials", async () => {
    seen.length = 0
    await Effect.runPromise(fetchPage(`${base}/set-cookie`, loopback))
    expect(seen.map((s) => s.path)).toEqual(["/set-cookie", "/echo"])
    for (const s of seen) {
      expect(s.headers["user-agent"]).toBe(WEB_USER_AGENT)
      expect(s.headers["cookie"]).toBeUndefined()
      expect(s.headers["authorization"]).toBeUndefined()
    }
  })

  test("the caps are the design's: 2 MB, 20 s, 5 redirects", () => {
    expect([WEB_FETCH_MAX_BYTES, WEB_FETCH_TIMEOUT_MS, WEB_FETCH_MAX_REDIRECTS]).toEqual([2 * 1024 * 1024, 20_000, 5])
  })
})

describe("web fetch: refusals name their rule", () => {
  test.each([
    ["loopback", "http://127.0.0.1/"],
    ["loopback (short form)", "http://127.1/"],
    ["loopback IPv6", "http://[::1]/"],
    ["private 10/8", "http://10.0.0.1/"],
    ["private 192.168/16", "http://192.168.1.1/"],
    ["private 172.16/12", "http://172.16.5.4/"],
    ["link-local", "http://169.254.10.10/"],
    ["metadata address", "http://169.254.169.254/latest/meta-data/"],
    ["unique-local IPv6", "http://[fd00::1]/"],
    ["link-local IPv6", "http://[fe80::1]/"],
    ["IPv4-mapped", "http://[::ffff:127.0.0.1]/"],
    ["IPv4-mapped (hex)", "http://[::ffff:a9fe:a9fe]/"],
    ["IPv4-compatible", "http://[::10.0.0.1]/"],
    ["NAT64 64:ff9b::/96", "http://[64:ff9b::a9fe:a9fe]/"],
    ["NAT64 local-use", "http://[64:ff9b:1::a00:1]/"],
    ["6to4 2002::/16", "http://[2002:a00:1::1]/"],
    ["Teredo (client 127.0.0.1)", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"],
    ["decimal IPv4", "http://2852039166/"]
  ])("%s: %s", async (_label, url) => {
    expect((await refusal(url, production)).rule).toBe("non-public-address")
  })

  test("metadata and local names are refused before any lookup", async () => {
    for (const url of ["http://metadata.google.internal/computeMetadata/v1/", "http://localhost/", "http://x.localhost/"]) {
      expect({ url, rule: (await refusal(url, production)).rule }).toEqual({ url, rule: "local-host" })
    }
  })

  test("the tests' loopback allowance lets loopback through, nothing else", async () => {
    for (const url of ["http://10.0.0.1/", "http://169.254.169.254/", "http://[fd00::1]/", "http://[64:ff9b::a00:1]/"]) {
      expect({ url, rule: (await refusal(url, loopback)).rule }).toEqual({ url, rule: "non-public-address" })
    }
  })

  test("a public-looking host that resolves to a private address (any one of its answers)", async () => {
    const options: WebFetchOptions = {
      allow: "loopback",
      resolve: dns({ "wiki.example.org": ["93.184.215.14", "10.9.8.7"], "cdn.example.org": ["::ffff:192.168.0.1"] })
    }
    const one = await refusal("https://wiki.example.org/page", options)
    expect(one.rule).toBe("non-public-address")
    expect(one.message).toContain("10.9.8.7 is a private address")
    expect((await refusal("https://cdn.example.org/", options)).rule).toBe("non-public-address")
  })

  test("a redirect to a private, metadata or mapped address is checked again and refused", async () => {
    for (const path of ["/to-private", "/to-metadata", "/to-mapped"]) {
      const r = await refusal(`${base}${path}`)
      expect({ path, rule: r.rule }).toEqual({ path, rule: "non-public-address" })
    }
  })

  test("more than 5 redirects", async () => {
    const r = await refusal(`${base}/loop`)
    expect(r.rule).toBe("redirects")
    expect(r.message).toContain("more than 5 redirects")
  })

  test("a 50 MB body (streamed, no length) and a declared 3 MB body pass the 2 MB cap: refused", async () => {
    seen.length = 0
    expect((await refusal(`${base}/big`)).rule).toBe("size")
    expect((await refusal(`${base}/big-declared`)).rule).toBe("size")
  })

  test("a slow-drip body past the time cap (lowered here) is refused by the time rule", async () => {
    const r = await refusal(`${base}/drip`, { ...loopback, timeoutMs: 1000 })
    expect(r.rule).toBe("time")
  })

  test("non-text content types: image, octet-stream, none", async () => {
    for (const path of ["/binary", "/octet", "/untyped"]) {
      expect({ path, rule: (await refusal(`${base}${path}`)).rule }).toEqual({ path, rule: "content-type" })
    }
  })

  test("schemes other than http(s), credentials in the URL, an HTTP error status", async () => {
    expect((await refusal("file:///etc/passwd")).rule).toBe("scheme")
    expect((await refusal("ftp://docs.example.com/x")).rule).toBe("scheme")
    expect((await refusal("gopher://docs.example.com/")).rule).toBe("scheme")
    expect((await refusal(`http://user:pw@127.0.0.1:${server.port}/echo`)).rule).toBe("credentials")
    expect((await refusal("not a url")).rule).toBe("not-a-url")
    expect((await refusal(`${base}/missing`)).rule).toBe("status")
    expect((await refusal("https://unknown.example.net/")).rule).toBe("dns")
  })
})
