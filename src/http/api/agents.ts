/** The Agent Builder API (spec "Agent Builder" endpoint table): agents, versions, import/export, shared skills. */
import { Effect, Either, Schema } from "effect"
import { Elysia } from "elysia"
import { randomBytes } from "node:crypto"
import { AgentStore } from "../../agents/AgentStore.ts"
import type { CatalogPage } from "../../agents/AgentView.ts"
import { type CatalogQuery, parseApiCatalogQuery, queryKey } from "../../agents/catalogQuery.ts"
import { importUpload, importZipUpload, type ImportOutcome } from "../../agents/importUpload.ts"
import { toClaudeFile } from "../../agents/interop.ts"
import { resolveAgentDefinition } from "../../agents/resolveAgentDefinition.ts"
import { SkillStore } from "../../agents/SkillStore.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { jobModelFor } from "../../providers/jobModelFor.ts"
import { Evals } from "../../worker/evals/Evals.ts"
import { badRequest, json, rawJson, type ApiError, type RawJson } from "../respond.ts"
import { decodeBody, jsonBody, param, type Handler, type RouteInput } from "../route.ts"
import type { Guard } from "../auth.ts"

const EnabledBody = Schema.Struct({ enabled: Schema.Boolean })
/**
 * The optional change note of a save (`note`, stored with the version) taken off the body, and the
 * rest of the body for the store to decode.
 */
const NoteBody = Schema.Struct(
  {
    note: Schema.optionalWith(
      Schema.String.annotations({ message: () => "must be text" }).pipe(
        Schema.maxLength(2000, { message: () => "is longer than 2,000 characters" })
      ),
      { exact: true }
    )
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
const decodeNote = decodeAll(NoteBody)
const withNote = (body: unknown): Effect.Effect<{ readonly note: string | undefined; readonly rest: unknown }, ApiError> => {
  if (body === null || typeof body !== "object" || Array.isArray(body) || !("note" in body))
    return Effect.succeed({ note: undefined, rest: body })
  const { note: _, ...rest } = body
  return Either.match(decodeNote(body), {
    onLeft: (p) => Effect.fail(badRequest(p)),
    onRight: ({ note }) => Effect.succeed({ note, rest })
  })
}
/** Starts the eval runs of gated saves (docs/evals.md). */
const startGated = Effect.flatMap(Evals, (e) => e.kick)

const CopyBody = Schema.Struct({ name: Schema.String })
/** `strict`: refuse Claude Code tools without a Kintsugi equivalent instead of dropping them with a warning. */
const Strict = { strict: Schema.optionalWith(Schema.Boolean, { exact: true }) }
const ImportBody = Schema.Union(
  Schema.Struct({
    files: Schema.Array(
      Schema.Struct({
        path: Schema.String,
        content: Schema.optionalWith(Schema.String, { exact: true }),
        contentBase64: Schema.optionalWith(Schema.String, { exact: true })
      })
    ),
    ...Strict
  }),
  Schema.Struct({ zip: Schema.String, ...Strict })
)

/** An import's answer: the agent (or the shared skill), the notes and warnings of what was adapted, and the tool mapping. */
const importAnswer = (r: ImportOutcome) =>
  r.kind === "agent"
    ? { agent: r.agent, changed: r.changed, notes: r.notes, warnings: r.warnings, toolMapping: r.toolMapping }
    : { skill: r.skill, created: r.created, notes: r.notes, warnings: r.warnings, toolMapping: r.toolMapping }

/** The `:version` path parameter: a positive whole number, else 400. */
export const versionParam = (input: RouteInput): Effect.Effect<number, ApiError> => {
  const raw = param(input, "version")
  const n = Number(raw)
  return Number.isInteger(n) && n > 0
    ? Effect.succeed(n)
    : Effect.fail(badRequest([{ path: "version", message: `"${raw}" is not a version number` }]))
}

const base64 = (text: string, path: string): Effect.Effect<Uint8Array, ApiError> =>
  /^[A-Za-z0-9+/\r\n]*={0,2}$/.test(text)
    ? Effect.succeed(new Uint8Array(Buffer.from(text, "base64")))
    : Effect.fail(badRequest([{ path, message: "is not base64" }]))

/** Differs per server process, so an ETag never outlives a restart (built-ins ship with the release). */
const BOOT = randomBytes(4).toString("hex")

/** RFC 9110 If-None-Match, weak comparison: `*` or any listed tag equal to `etag`. */
const notModified = (header: string | null, etag: string): boolean =>
  header !== null &&
  header.split(",").some((t) => {
    const tag = t.trim().replace(/^W\//, "")
    return tag === "*" || tag === etag
  })

/**
 * The catalog, paged and filtered (`?q=&kind=&audience=&state=&limit=&cursor=`, `?all=1` for every
 * agent), with an ETag: the same URL answers 304 until something that could change it is written.
 */
const catalogRoute = (input: RouteInput) =>
  Effect.gen(function* () {
    const parsed = parseApiCatalogQuery(input.url.searchParams)
    if (Either.isLeft(parsed)) return yield* Effect.fail(badRequest(parsed.left))
    const page = yield* (yield* AgentStore).page(parsed.right)
    const { body, etag } = rendered(page, parsed.right)
    const headers = { etag, "cache-control": "private, no-cache" }
    if (notModified(input.request.headers.get("if-none-match"), etag)) return new Response(null, { status: 304, headers })
    return json(body, 200, headers)
  })

// A page is cached (and the same object) for its generation and query: its JSON (the full export can
// be large) and its ETag are made once.
const renderedPages = new WeakMap<CatalogPage, { readonly body: RawJson; readonly etag: string }>()
const rendered = (page: CatalogPage, query: CatalogQuery): { readonly body: RawJson; readonly etag: string } => {
  const known = renderedPages.get(page)
  if (known !== undefined) return known
  const made = {
    body: rawJson({ agents: page.entries, total: page.total, matched: page.matched, nextCursor: page.nextCursor }),
    etag: `"c-${BOOT}-${page.generation}-${Bun.hash(queryKey(query)).toString(36)}"`
  }
  renderedPages.set(page, made)
  return made
}

export const agentRoutes = (
  route: (guard: Guard, handler: Handler) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>
) => {
  const store = AgentStore
  return new Elysia({ name: "agent-builder-api" })
    .get("/api/admin/agents", route("read", catalogRoute))
    .get(
      "/api/admin/agents/context",
      route("read", () =>
        Effect.map(
          Effect.flatMap(store, (s) => s.context),
          json
        )
      )
    )
    .post(
      "/api/admin/agents/preview",
      route("read", ({ request }) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(request)
          return json(yield* (yield* store).preview(body))
        })
      )
    )
    .post(
      "/api/admin/agents/import",
      route("agents.manage", ({ request, principal }) =>
        Effect.gen(function* () {
          const body = yield* decodeBody(request, ImportBody)
          const options = { strict: body.strict === true }
          // A gated version waits for its evals: start them now rather than at the worker's next sweep.
          if ("zip" in body)
            return json(
              importAnswer(
                yield* Effect.tap(importZipUpload(yield* base64(body.zip, "zip"), principal.username, options), () => startGated)
              ),
              201
            )
          const files = yield* Effect.forEach(
            body.files,
            (f, i): Effect.Effect<{ path: string; content: string | Uint8Array }, ApiError> =>
              f.contentBase64 !== undefined
                ? Effect.map(base64(f.contentBase64, `files.${i}.contentBase64`), (content) => ({ path: f.path, content }))
                : f.content !== undefined
                  ? Effect.succeed({ path: f.path, content: f.content })
                  : Effect.fail(badRequest([{ path: `files.${i}`, message: "needs content or contentBase64" }]))
          )
          return json(importAnswer(yield* Effect.tap(importUpload(files, principal.username, options), () => startGated)), 201)
        })
      )
    )
    .post(
      "/api/admin/agents",
      route("agents.manage", ({ request, principal }) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(request)
          return json({ agent: yield* (yield* store).create(body, principal.username) }, 201)
        })
      )
    )
    .get(
      "/api/admin/agents/:name",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(store, (s) => s.get(param(i, "name"))),
          (agent) => json({ agent })
        )
      )
    )
    .put(
      "/api/admin/agents/:name",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          const { note, rest } = yield* withNote(body)
          const agent = yield* (yield* store).save(param(i, "name"), rest, i.principal.username, note)
          yield* startGated
          // The gate's run was claimed just now: show it running.
          return json({ agent: agent.gate === undefined ? agent : yield* (yield* store).get(agent.name) })
        })
      )
    )
    .patch(
      "/api/admin/agents/:name",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const { enabled } = yield* decodeBody(i.request, EnabledBody)
          return json({ agent: yield* (yield* store).setEnabled(param(i, "name"), enabled) })
        })
      )
    )
    .delete(
      "/api/admin/agents/:name",
      route("agents.manage", (i) =>
        Effect.map(
          Effect.flatMap(store, (s) => s.remove(param(i, "name"))),
          () => new Response(null, { status: 204 })
        )
      )
    )
    .post(
      "/api/admin/agents/:name/copy",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const { name } = yield* decodeBody(i.request, CopyBody)
          return json({ agent: yield* (yield* store).copy(param(i, "name"), name, i.principal.username) }, 201)
        })
      )
    )
    .get(
      "/api/admin/agents/:name/definition",
      route("read", (i) =>
        Effect.gen(function* () {
          const definition = yield* resolveAgentDefinition(param(i, "name"))
          // What a job would really run on: the binding (?project= picks a project's) and the clamped thinking level.
          const model = yield* jobModelFor(param(i, "name"), definition.thinking, i.url.searchParams.get("project") ?? "")
          return json({ definition, model })
        })
      )
    )
    .get(
      "/api/admin/agents/:name/export",
      route("read", (i) =>
        Effect.gen(function* () {
          const raw = i.url.searchParams.get("version")
          const version = raw === null ? undefined : yield* versionParam({ ...i, params: { version: raw } })
          const name = param(i, "name")
          const format = i.url.searchParams.get("format") ?? "zip"
          if (format !== "zip" && format !== "claude")
            return yield* Effect.fail(badRequest([{ path: "format", message: "must be zip or claude" }]))
          if (format === "claude") {
            const pkg = yield* (yield* store).exportPackage(name, version)
            return new Response(toClaudeFile(pkg), {
              headers: {
                "content-type": "text/markdown; charset=utf-8",
                "content-disposition": `attachment; filename="${name}.md"`,
                "cache-control": "no-store",
                "x-content-type-options": "nosniff"
              }
            })
          }
          const zip = yield* (yield* store).exportZip(name, version)
          return new Response(zip, {
            headers: {
              "content-type": "application/zip",
              "content-disposition": `attachment; filename="${name}${version === undefined ? "" : `-v${version}`}.zip"`,
              "cache-control": "no-store"
            }
          })
        })
      )
    )
    .get(
      "/api/admin/agents/:name/restores",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(store, (s) => s.restores(param(i, "name"))),
          (restores) => json({ restores })
        )
      )
    )
    .get(
      "/api/admin/agents/:name/versions",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(store, (s) => s.versions(param(i, "name"))),
          (versions) => json({ versions })
        )
      )
    )
    .get(
      "/api/admin/agents/:name/versions/:version",
      route("read", (i) =>
        Effect.gen(function* () {
          const v = yield* versionParam(i)
          return json(yield* (yield* store).version(param(i, "name"), v))
        })
      )
    )
    .post(
      "/api/admin/agents/:name/versions/:version/restore",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const v = yield* versionParam(i)
          return json({ agent: yield* (yield* store).restore(param(i, "name"), v, i.principal.username) })
        })
      )
    )
    .get(
      "/api/admin/agent-skills",
      route("read", () =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.list),
          (skills) => json({ skills })
        )
      )
    )
    .post(
      "/api/admin/agent-skills",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          return json({ skill: yield* (yield* SkillStore).create(body, i.principal.username) }, 201)
        })
      )
    )
    .get(
      "/api/admin/agent-skills/:name",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.get(param(i, "name"))),
          (skill) => json({ skill })
        )
      )
    )
    .put(
      "/api/admin/agent-skills/:name",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const body = yield* jsonBody(i.request)
          const { note, rest } = yield* withNote(body)
          return json({ skill: yield* (yield* SkillStore).update(param(i, "name"), rest, i.principal.username, note) })
        })
      )
    )
    .get(
      "/api/admin/agent-skills/:name/versions",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.versions(param(i, "name"))),
          (versions) => json({ versions })
        )
      )
    )
    .get(
      "/api/admin/agent-skills/:name/versions/:version",
      route("read", (i) =>
        Effect.gen(function* () {
          const v = yield* versionParam(i)
          return json(yield* (yield* SkillStore).version(param(i, "name"), v))
        })
      )
    )
    .post(
      "/api/admin/agent-skills/:name/versions/:version/restore",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const v = yield* versionParam(i)
          return json({ skill: yield* (yield* SkillStore).restore(param(i, "name"), v, i.principal.username) })
        })
      )
    )
    .delete(
      "/api/admin/agent-skills/:name",
      route("agents.manage", (i) =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.remove(param(i, "name"))),
          () => new Response(null, { status: 204 })
        )
      )
    )
}
