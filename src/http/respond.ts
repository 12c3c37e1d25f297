/**
 * The HTTP edge's one mapping from domain error to status and a stable JSON error body:
 * `{ "error": { "code", "message", "problems"?, "agents"? } }`. Defects become a generic 500 with
 * no detail (the detail goes to the server log, never to the client).
 */
import { Cause, Exit, Option } from "effect"
import type { Problem } from "../contract/Problem.ts"

/** Every error a route may fail with. */
export type ApiError =
  | { readonly _tag: "AgentNotFound"; readonly message: string }
  | { readonly _tag: "AgentVersionNotFound"; readonly message: string }
  | { readonly _tag: "AgentInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "AgentExists"; readonly message: string }
  | { readonly _tag: "BuiltinReadOnly"; readonly message: string }
  | { readonly _tag: "AgentUnavailable"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "SkillNotFound"; readonly message: string }
  | { readonly _tag: "SkillExists"; readonly message: string }
  | { readonly _tag: "SkillInUse"; readonly message: string; readonly agents: ReadonlyArray<string> }
  | { readonly _tag: "SkillNameTaken"; readonly message: string; readonly agents: ReadonlyArray<string> }
  | { readonly _tag: "SkillInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "ImportRejected"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "InvalidCredentials"; readonly message: string }
  | { readonly _tag: "BadRequest"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "Unauthenticated"; readonly message: string }
  | { readonly _tag: "Forbidden"; readonly message: string }
  | { readonly _tag: "NotFound"; readonly message: string }
  | { readonly _tag: "ProviderNotFound"; readonly message: string }
  | { readonly _tag: "ProviderInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "ProviderExists"; readonly message: string }
  | { readonly _tag: "ProviderInUse"; readonly message: string; readonly agents: ReadonlyArray<string> }
  | { readonly _tag: "BindingInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "BindingNotFound"; readonly message: string }
  | { readonly _tag: "JobNotFound"; readonly message: string }
  | { readonly _tag: "IdempotencyKeyReused"; readonly message: string }
  | { readonly _tag: "ProjectExists"; readonly message: string }
  | { readonly _tag: "McpServerNotFound"; readonly message: string }
  | { readonly _tag: "McpServerInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "McpUnreachable"; readonly message: string }
  | { readonly _tag: "WebSearchInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "WebSearchNotConfigured"; readonly message: string }
  | { readonly _tag: "WebSettingsInvalid"; readonly message: string; readonly problems: ReadonlyArray<Problem> }
  | { readonly _tag: "PayloadTooLarge"; readonly message: string }
  | { readonly _tag: "TooManyRequests"; readonly message: string; readonly retryAfterSeconds: number }

export const statusOf = (e: ApiError): number => {
  switch (e._tag) {
    case "BadRequest":
    case "AgentInvalid":
    case "SkillInvalid":
    case "ImportRejected":
    case "ProviderInvalid":
    case "BindingInvalid":
    case "McpServerInvalid":
    case "WebSearchInvalid":
    case "WebSettingsInvalid":
      return 400
    case "Unauthenticated":
    case "InvalidCredentials":
      return 401
    case "Forbidden":
      return 403
    case "AgentNotFound":
    case "AgentVersionNotFound":
    case "SkillNotFound":
    case "NotFound":
    case "ProviderNotFound":
    case "BindingNotFound":
    case "JobNotFound":
    case "McpServerNotFound":
    case "WebSearchNotConfigured":
      return 404
    case "AgentExists":
    case "BuiltinReadOnly":
    case "SkillExists":
    case "SkillInUse":
    case "SkillNameTaken":
    case "ProviderExists":
    case "ProviderInUse":
    case "ProjectExists":
      return 409
    case "PayloadTooLarge":
      return 413
    case "AgentUnavailable":
    case "IdempotencyKeyReused":
      return 422
    case "TooManyRequests":
      return 429
    case "McpUnreachable":
      return 502
  }
}

const kebab = (tag: string) => tag.replace(/([a-z])([A-Z])/g, "$1-$2").toLowerCase()

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
  "referrer-policy": "same-origin"
} as const

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...SECURITY_HEADERS, ...headers }
  })

export const errorBody = (e: ApiError) => ({
  error: {
    code: kebab(e._tag),
    message: e.message,
    ...("problems" in e ? { problems: e.problems } : {}),
    ...("agents" in e ? { agents: e.agents } : {})
  }
})

/** The error as JSON; a 429 also says when to come back (`Retry-After`, seconds). */
export const errorResponse = (e: ApiError): Response =>
  json(errorBody(e), statusOf(e), e._tag === "TooManyRequests" ? { "retry-after": String(e.retryAfterSeconds) } : {})

/** A route's outcome as a response; `log` receives defects (never the client). */
export const fromExit = (exit: Exit.Exit<Response, ApiError>, log: (line: string) => void): Response => {
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return errorResponse(failure.value)
  log(`request failed: ${Cause.pretty(exit.cause)}`)
  return json({ error: { code: "internal", message: "internal server error" } }, 500)
}

export const badRequest = (problems: ReadonlyArray<Problem>, message = "the request has problems"): ApiError => ({
  _tag: "BadRequest",
  message,
  problems
})
