/**
 * The HTTP edge's one mapping from domain error to status and a stable JSON error body:
 * `{ "error": { "code", "message", "problems"?, "agents"? } }`. Defects become a generic 500 with
 * no detail (the detail goes to the server log, never to the client).
 */
import { Cause, Exit, Option } from "effect"
import type { InvalidCredentials, UserExists } from "../access/errors.ts"
import type {
  AgentExists,
  AgentInvalid,
  AgentNotFound,
  AgentUnavailable,
  AgentVersionNotFound,
  BuiltinReadOnly,
  ImportRejected,
  SkillExists,
  SkillInUse,
  SkillInvalid,
  SkillNameTaken,
  SkillNotFound,
  SkillVersionNotFound
} from "../agents/errors.ts"
import type { Problem } from "../contract/Problem.ts"
import type { RowInvalid, StoreUnavailable } from "../db/StoreError.ts"
import type {
  BindingInvalid,
  BindingNotFound,
  McpServerInvalid,
  McpServerNotFound,
  McpUnreachable,
  ProviderExists,
  ProviderInUse,
  ProviderInvalid,
  ProviderNotFound
} from "../providers/errors.ts"
import type { IdempotencyKeyReused, JobNotFound } from "../worker/JobStore.ts"
import type { ProjectExists } from "../worker/Projects.ts"
import type { JobNotContinuable } from "../worker/transcripts/continuation.ts"
import type { JobNotExportable } from "./api/exportTestFolder.ts"
import type { EvalRunNotFound, EvalsRefused, NoEvals } from "../worker/evals/Evals.ts"
import type { WebSettingsInvalid } from "../web/ProjectWeb.ts"
import type { WebSearchInvalid, WebSearchNotConfigured } from "../web/WebSearch.ts"
import { BadRequest, Forbidden, NotFound, type PayloadTooLarge, type TooManyRequests, type Unauthenticated } from "./errors.ts"

export { BadRequest, Forbidden, NotFound, PayloadTooLarge, TooManyRequests, Unauthenticated } from "./errors.ts"

/** Every error a route may fail with: the domain's tagged errors and the edge's own (errors.ts). */
export type ApiError =
  | AgentNotFound
  | AgentVersionNotFound
  | AgentInvalid
  | AgentExists
  | BuiltinReadOnly
  | AgentUnavailable
  | SkillNotFound
  | SkillVersionNotFound
  | SkillExists
  | SkillInUse
  | SkillNameTaken
  | SkillInvalid
  | ImportRejected
  | InvalidCredentials
  | UserExists
  | ProviderNotFound
  | ProviderInvalid
  | ProviderExists
  | ProviderInUse
  | BindingInvalid
  | BindingNotFound
  | McpServerNotFound
  | McpServerInvalid
  | McpUnreachable
  | WebSearchInvalid
  | WebSearchNotConfigured
  | WebSettingsInvalid
  | JobNotFound
  | JobNotContinuable
  | JobNotExportable
  | IdempotencyKeyReused
  | ProjectExists
  | NoEvals
  | EvalsRefused
  | EvalRunNotFound
  | StoreUnavailable
  | RowInvalid
  | BadRequest
  | Unauthenticated
  | Forbidden
  | NotFound
  | PayloadTooLarge
  | TooManyRequests

/**
 * Each error class beside its HTTP status: the edge's one mapping. A class added to ApiError without a
 * status here does not compile.
 */
const STATUS: { readonly [Tag in ApiError["_tag"]]: number } = {
  BadRequest: 400,
  AgentInvalid: 400,
  SkillInvalid: 400,
  ImportRejected: 400,
  ProviderInvalid: 400,
  BindingInvalid: 400,
  McpServerInvalid: 400,
  WebSearchInvalid: 400,
  WebSettingsInvalid: 400,
  EvalsRefused: 400,
  Unauthenticated: 401,
  InvalidCredentials: 401,
  Forbidden: 403,
  AgentNotFound: 404,
  AgentVersionNotFound: 404,
  SkillNotFound: 404,
  SkillVersionNotFound: 404,
  NotFound: 404,
  ProviderNotFound: 404,
  BindingNotFound: 404,
  JobNotFound: 404,
  McpServerNotFound: 404,
  WebSearchNotConfigured: 404,
  EvalRunNotFound: 404,
  AgentExists: 409,
  BuiltinReadOnly: 409,
  SkillExists: 409,
  SkillInUse: 409,
  SkillNameTaken: 409,
  ProviderExists: 409,
  ProviderInUse: 409,
  ProjectExists: 409,
  UserExists: 409,
  NoEvals: 409,
  JobNotContinuable: 409,
  JobNotExportable: 409,
  PayloadTooLarge: 413,
  AgentUnavailable: 422,
  IdempotencyKeyReused: 422,
  TooManyRequests: 429,
  RowInvalid: 500,
  McpUnreachable: 502,
  StoreUnavailable: 503
}

export const statusOf = (e: ApiError): number => STATUS[e._tag]

const kebab = (tag: string) => tag.replace(/([a-z])([A-Z])/g, "$1-$2").toLowerCase()

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
  "referrer-policy": "same-origin"
} as const

/** A body already rendered as JSON text (`rawJson`), for answers cached and sent many times. */
export class RawJson {
  constructor(readonly text: string) {}
}
export const rawJson = (body: unknown): RawJson => new RawJson(JSON.stringify(body))

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(body instanceof RawJson ? body.text : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...SECURITY_HEADERS, ...headers }
  })

const errorBody = (e: ApiError) => ({
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

/** The server's own failures (the database, a malformed row), whose cause is logged; an upstream's (502) is the answer alone. */
export const ownFailure = (e: ApiError): boolean => e._tag === "RowInvalid" || e._tag === "StoreUnavailable"

/** A route's outcome as a response; `log` receives defects and the server's own failures (never the client). */
export const fromExit = (exit: Exit.Exit<Response, ApiError>, log: (line: string) => void): Response => {
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    if (ownFailure(failure.value)) log(`request failed: ${Cause.pretty(exit.cause)}`)
    return errorResponse(failure.value)
  }
  log(`request failed: ${Cause.pretty(exit.cause)}`)
  return json({ error: { code: "internal", message: "internal server error" } }, 500)
}

export const badRequest = (problems: ReadonlyArray<Problem>, message = "the request has problems"): BadRequest =>
  new BadRequest({ message, problems })

/** 403 with `message`. */
export const forbidden = (message: string): Forbidden => new Forbidden({ message })

/** 404 with `message`. */
export const notFound = (message: string): NotFound => new NotFound({ message })
