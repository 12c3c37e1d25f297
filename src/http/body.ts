/**
 * The one request-body reader of the API and the portal: streamed chunk by chunk and abandoned past a
 * cap (413), strict UTF-8 (400, never repaired), JSON depth-bounded before parsing and forms decoded
 * strictly, with every string the database could not store named (400).
 */
import { Effect } from "effect"
import type { Problem } from "../contract/Problem.ts"
import { badRequest, PayloadTooLarge, type ApiError } from "./respond.ts"
import { fieldTextProblems, jsonTextProblems, MAX_JSON_DEPTH, nestsDeeperThan, urlEncodedPairs, utf8 } from "./textBounds.ts"

/** The cap of every request body (also Bun's `maxRequestBodySize`). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024
/** Sign-in (API and portal) takes a username and a password: nothing needs more. */
export const SIGN_IN_BODY_BYTES = 64 * 1024

const tooLarge = (max: number): ApiError => new PayloadTooLarge({ message: `the request body is larger than the limit of ${max} bytes` })
const unreadable = badRequest([{ path: "(body)", message: "could not be read to its end" }])

/**
 * The body's bytes, read as they arrive and abandoned (the stream cancelled) as soon as they pass `max`;
 * a declared Content-Length over `max` is refused before reading anything. No body = no bytes.
 */
const readBody = (request: Request, max: number = MAX_BODY_BYTES): Effect.Effect<Uint8Array, ApiError> =>
  Effect.gen(function* () {
    const declared = request.headers.get("content-length")
    if (declared !== null && Number(declared) > max) return yield* Effect.fail(tooLarge(max))
    const body = request.body
    if (body === null) return new Uint8Array(0)
    const chunks = yield* Effect.tryPromise({
      try: async () => {
        const reader = body.getReader()
        const read: Array<Uint8Array> = []
        let size = 0
        while (true) {
          const { done, value } = await reader.read()
          if (done) return read
          size += value.byteLength
          if (size > max) {
            await reader.cancel().catch(() => undefined)
            return undefined
          }
          read.push(value)
        }
      },
      catch: () => unreadable
    })
    return chunks === undefined ? yield* Effect.fail(tooLarge(max)) : new Uint8Array(Buffer.concat(chunks))
  })

const refuse = (problems: ReadonlyArray<Problem>) => Effect.fail(badRequest(problems))

/** The body as strict UTF-8 text, capped at `max` bytes. */
const textBody = (request: Request, max: number = MAX_BODY_BYTES): Effect.Effect<string, ApiError> =>
  Effect.flatMap(readBody(request, max), (bytes) => {
    const text = utf8(bytes)
    return text === undefined ? refuse([{ path: "(body)", message: "is not valid UTF-8" }]) : Effect.succeed(text)
  })

/**
 * The JSON body: capped, strict UTF-8, at most MAX_JSON_DEPTH levels deep (checked on the text, before
 * parsing), and no string or key holding a NUL, another control character or an unpaired surrogate.
 */
export const jsonBody = (request: Request, max: number = MAX_BODY_BYTES): Effect.Effect<unknown, ApiError> =>
  Effect.gen(function* () {
    const text = yield* textBody(request, max)
    if (nestsDeeperThan(text, MAX_JSON_DEPTH))
      return yield* refuse([{ path: "(body)", message: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }])
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return yield* refuse([{ path: "(body)", message: "is not valid JSON" }])
    }
    const problems = jsonTextProblems(value)
    return problems.length > 0 ? yield* refuse(problems) : value
  })

/** A form as `Response.formData()` reads it. */
export type PostedForm = Awaited<ReturnType<Response["formData"]>>

const formOf = (pairs: ReadonlyArray<readonly [string, string]>): Effect.Effect<PostedForm> =>
  Effect.promise(() => new Response(new URLSearchParams(pairs.map(([k, v]): [string, string] => [k, v]))).formData())

/**
 * The FormData class, as the type `Response.formData()` answers: at run time Bun has one class (what
 * `formData()` makes is an instance of it); the DOM lib's declaration of it lacks undici's iterator.
 */
const FormDataOfResponse = FormData as unknown as new () => PostedForm

/** No form (a GET): made at once, without the round through a Response that `formOf` takes. */
export const emptyForm = (): Effect.Effect<PostedForm> => Effect.sync(() => new FormDataOfResponse())

const boundaryOf = (type: string): string | undefined => /;\s*boundary="?([^";]+)"?/i.exec(type)?.[1]

/** Fields of a multipart body (not file parts) whose bytes are not UTF-8. */
const multipartEncodingProblems = (bytes: Uint8Array, boundary: string): Array<Problem> => {
  // latin1 maps byte n to U+00nn, so string offsets are byte offsets.
  const raw = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")
  const problems: Array<Problem> = []
  for (const part of raw.split(`--${boundary}`).slice(1)) {
    if (part.startsWith("--")) break
    const end = part.indexOf("\r\n\r\n")
    if (end < 0) continue
    const headers = part.slice(0, end)
    if (/filename\*?=/i.test(headers)) continue
    const content = part.slice(end + 4).replace(/\r\n$/, "")
    if (utf8(Buffer.from(content, "latin1")) === undefined) {
      problems.push({ path: /name="([^"]*)"/i.exec(headers)?.[1] ?? "(body)", message: "is not valid UTF-8" })
    }
  }
  return problems
}

/**
 * The posted form (urlencoded or multipart), capped at `max` bytes, strictly decoded: a field that is
 * not UTF-8 or holds a character that cannot be stored is a 400 naming it. No content type = an empty form.
 */
export const formBody = (request: Request, max: number = MAX_BODY_BYTES): Effect.Effect<PostedForm, ApiError> =>
  Effect.gen(function* () {
    const type = request.headers.get("content-type") ?? ""
    if (type === "") return yield* emptyForm()
    if (type.startsWith("application/x-www-form-urlencoded")) {
      const { pairs, problems } = urlEncodedPairs(yield* textBody(request, max))
      if (problems.length > 0) return yield* refuse(problems)
      return yield* formOf(pairs)
    }
    const boundary = boundaryOf(type)
    if (!type.startsWith("multipart/form-data") || boundary === undefined)
      return yield* refuse([{ path: "(body)", message: "expected a form" }])
    const bytes = yield* readBody(request, max)
    const encoding = multipartEncodingProblems(bytes, boundary)
    if (encoding.length > 0) return yield* refuse(encoding)
    const form = yield* Effect.tryPromise({
      try: () => new Response(bytes, { headers: { "content-type": type } }).formData(),
      catch: () => badRequest([{ path: "(body)", message: "is not a readable form" }])
    })
    const text: Array<[string, string]> = []
    form.forEach((value, name) => text.push([name, typeof value === "string" ? value : value.name]))
    const problems = fieldTextProblems(text)
    return problems.length > 0 ? yield* refuse(problems) : form
  })
