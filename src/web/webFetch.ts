/**
 * The web_fetch boundary (design/memory-and-web.md §4): a page any model may ask for, so every rule
 * assumes a hostile URL. http/https only; the host resolved once and every address checked against the
 * URL policy (urlPolicy.ts: no loopback, private, link-local, metadata or embedded IPv4 forms), the
 * connection pinned to the checked address (pinnedFetch.ts); at most 5 redirects, each checked again;
 * a 2 MB body cap and a 20 s time cap over the whole fetch; text-like content types only; no cookies,
 * no credentials, a fixed user agent. A refusal names the rule it applied.
 */
import { Effect, Either, Schema } from "effect"
import { fetchPinned } from "../net/pinnedFetch.ts"
import { checkTargetRule, systemResolver, type NetworkAllowance, type Resolver, type UrlRule } from "../net/urlPolicy.ts"
import { pageText } from "./htmlText.ts"

export const WEB_FETCH_MAX_BYTES = 2 * 1024 * 1024
export const WEB_FETCH_TIMEOUT_MS = 20_000
export const WEB_FETCH_MAX_REDIRECTS = 5
export const WEB_USER_AGENT = "KintsugiRuntime-WebFetch/1 (+https://kintsugi.invalid/web-fetch)"

/** The rules a fetch can be refused by, beyond the URL policy's own. */
type FetchRule = UrlRule | "redirects" | "size" | "time" | "content-type" | "status" | "network"

export class WebFetchRefused extends Schema.TaggedError<WebFetchRefused>()("WebFetchRefused", {
  rule: Schema.String,
  url: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `web_fetch refused ${this.url} (rule: ${this.rule}): ${this.problem}`
  }
}

export interface WebFetchOptions {
  /** `"loopback"` only for the tests' scripted pages (webFetchPolicy.ts); `false` in production. */
  readonly allow: NetworkAllowance
  readonly resolve?: Resolver
  /** Caps; tests lower them (the defaults are the design's). */
  readonly maxBytes?: number
  readonly timeoutMs?: number
  readonly maxRedirects?: number
}

export interface FetchedPage {
  /** The URL the page came from, after redirects. */
  readonly url: string
  readonly status: number
  readonly mediaType: string
  readonly title: string | undefined
  readonly text: string
}

/** Media types whose body is text: text/*, JSON, XML and their structured-suffix forms. */
const isTextLike = (mediaType: string): boolean =>
  mediaType.startsWith("text/") ||
  [
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript"
  ].includes(mediaType) ||
  /^application\/[a-z0-9.+-]+\+(json|xml)$/.test(mediaType)

const parseContentType = (header: string | null): { readonly mediaType: string; readonly charset: string | undefined } => {
  const [type = "", ...params] = (header ?? "").split(";")
  const charset = params
    .map((p) => p.trim())
    .find((p) => p.toLowerCase().startsWith("charset="))
    ?.slice(8)
    .replace(/^"|"$/g, "")
  return { mediaType: type.trim().toLowerCase(), charset }
}

const decoderFor = (charset: string | undefined): TextDecoder => {
  try {
    return new TextDecoder((charset ?? "utf-8") as ConstructorParameters<typeof TextDecoder>[0])
  } catch {
    return new TextDecoder("utf-8")
  }
}

/** Reads at most `max` bytes of the body; more is a refusal (the stream is cancelled, not drained). */
export const readCapped = async (response: Response, max: number): Promise<Uint8Array | "too-large"> => {
  const declared = Number(response.headers.get("content-length") ?? "NaN")
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel().catch(() => undefined)
    return "too-large"
  }
  if (response.body === null) return new Uint8Array(0)
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => undefined)
      return "too-large"
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

class Refusal {
  constructor(
    readonly rule: FetchRule,
    readonly url: string,
    readonly problem: string
  ) {}
}

/** One page, by the rules above; the whole fetch (redirects and body included) shares one time cap. */
export const fetchPage = (raw: string, options: WebFetchOptions): Effect.Effect<FetchedPage, WebFetchRefused> => {
  const maxBytes = options.maxBytes ?? WEB_FETCH_MAX_BYTES
  const timeoutMs = options.timeoutMs ?? WEB_FETCH_TIMEOUT_MS
  const maxRedirects = options.maxRedirects ?? WEB_FETCH_MAX_REDIRECTS
  const resolve = options.resolve ?? systemResolver

  const run = async (signal: AbortSignal): Promise<FetchedPage | Refusal> => {
    let current = raw
    for (let hop = 0; ; hop++) {
      const checked = await checkTargetRule(current, options.allow, resolve)
      if (Either.isLeft(checked)) return new Refusal(checked.left.rule, current, `the URL ${checked.left.problem}`)
      let response: Response
      try {
        response = await fetchPinned(checked.right, {
          method: "GET",
          signal,
          // A fixed set: no cookie, no authorization, nothing of the caller's; the server learns only the URL.
          headers: { "user-agent": WEB_USER_AGENT, accept: "text/html, text/plain;q=0.9, text/*;q=0.8, application/json;q=0.5, */*;q=0.1" },
          credentials: "omit"
        })
      } catch (e) {
        if (signal.aborted) throw e
        return new Refusal("network", current, "the server could not be reached")
      }
      if (REDIRECTS.has(response.status)) {
        await response.body?.cancel().catch(() => undefined)
        const location = response.headers.get("location")
        if (location === null) return new Refusal("status", current, `HTTP ${response.status} without a Location`)
        if (hop >= maxRedirects) return new Refusal("redirects", current, `more than ${maxRedirects} redirects`)
        current = new URL(location, checked.right.url).toString()
        continue
      }
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel().catch(() => undefined)
        return new Refusal("status", current, `the server answered HTTP ${response.status}`)
      }
      const { mediaType, charset } = parseContentType(response.headers.get("content-type"))
      if (!isTextLike(mediaType)) {
        await response.body?.cancel().catch(() => undefined)
        return new Refusal("content-type", current, `${mediaType === "" ? "no content type" : mediaType} is not a text type`)
      }
      const body = await readCapped(response, maxBytes)
      if (body === "too-large") return new Refusal("size", current, `the body is larger than ${maxBytes} bytes`)
      const page = pageText(decoderFor(charset).decode(body), mediaType)
      return { url: current, status: response.status, mediaType, title: page.title, text: page.text }
    }
  }

  let timedOut = false
  return Effect.tryPromise({
    try: (signal) => {
      const controller = new AbortController()
      const onAbort = () => controller.abort()
      signal.addEventListener("abort", onAbort)
      const timer = setTimeout(() => {
        timedOut = true
        controller.abort()
      }, timeoutMs)
      return run(controller.signal).finally(() => {
        clearTimeout(timer)
        signal.removeEventListener("abort", onAbort)
      })
    },
    catch: () =>
      timedOut
        ? new WebFetchRefused({ rule: "time", url: raw, problem: `the fetch took longer than ${Math.round(timeoutMs / 1000)} s` })
        : new WebFetchRefused({ rule: "network", url: raw, problem: "the connection failed while reading the page" })
  }).pipe(
    Effect.flatMap((r) =>
      r instanceof Refusal ? Effect.fail(new WebFetchRefused({ rule: r.rule, url: r.url, problem: r.problem })) : Effect.succeed(r)
    ),
    Effect.withSpan("web.fetch", { attributes: { "kintsugi.web.max_bytes": maxBytes } })
  )
}
