/**
 * LLM providers (Admin → LLM Providers): custom OpenAI-/Anthropic-compatible endpoints with their
 * models, and pi-ai's built-in providers. API keys and header values are sealed at rest and
 * write-only: no view returns them; only `configs` (for the worker's job envelope) opens them.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { decodeRows, Jsonb, Timestamp } from "../db/rowSchema.ts"
import { type StoreError, storeMethod } from "../db/StoreError.ts"
import { type ProviderConfig, ProviderModel } from "../contract/ProviderConfig.ts"
import { makeJobModels, supportedThinking } from "../kernel/PiAiModels.ts"
import { ProviderExists, ProviderInUse, ProviderInvalid, ProviderNotFound } from "./errors.ts"
import { probeProvider, type ProbeResult } from "./providerProbe.ts"
import { openHeaders, SecretBox, sealHeaders } from "./SecretBox.ts"
import { traced } from "../telemetry/traced.ts"

const Id = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9-]{0,63}$/, { message: () => "must match [a-z][a-z0-9-]* (at most 64 characters)" })
)
const HttpUrl = Schema.String.pipe(
  Schema.filter((u) =>
    URL.canParse(u) && /^https?:$/.test(new URL(u).protocol) && new URL(u).username === ""
      ? undefined
      : "must be an http(s) URL without credentials"
  )
)
const Headers = Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9-]{1,64}$/)), value: Schema.String })

const Api = Schema.Literal("openai-completions", "openai-responses", "anthropic-messages")

const CustomProviderInput = Schema.Struct({
  kind: Schema.Literal("custom"),
  id: Id,
  api: Api,
  baseUrl: HttpUrl,
  /** Required on create; on update, absent keeps the stored key. */
  apiKey: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { exact: true }),
  headers: Schema.optionalWith(Headers, { exact: true }),
  models: Schema.Array(ProviderModel).pipe(Schema.minItems(1, { message: () => "needs at least one model" }))
})
const BuiltinProviderInput = Schema.Struct({
  kind: Schema.Literal("builtin"),
  id: Id,
  builtin: Schema.String,
  apiKey: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { exact: true })
})
const ProviderInput = Schema.Union(CustomProviderInput, BuiltinProviderInput)

/** An update's body: the configuration; its id is the route's (an `id` in the body is accepted and ignored). */
const ProviderUpdate = Schema.Union(
  Schema.Struct({ ...CustomProviderInput.fields, id: Schema.optionalWith(Schema.Unknown, { exact: true }) }),
  Schema.Struct({ ...BuiltinProviderInput.fields, id: Schema.optionalWith(Schema.Unknown, { exact: true }) })
)

export interface ModelView {
  readonly id: string
  readonly contextWindow: number
  readonly maxTokens: number
  readonly thinkingLevels: ReadonlyArray<ThinkingLevel>
  readonly cost: { readonly input: number; readonly output: number; readonly cacheRead: number; readonly cacheWrite: number } | null
}

/** What the API and the portal see: never a key or a header value. */
export interface ProviderView {
  readonly id: string
  readonly kind: "custom" | "builtin"
  readonly api: string | null
  readonly baseUrl: string | null
  readonly builtin: string | null
  readonly models: ReadonlyArray<ModelView>
  readonly hasApiKey: boolean
  readonly headerNames: ReadonlyArray<string>
  readonly updatedBy: string
  readonly updatedAt: Date
}

const Row = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("custom", "builtin"),
  api: Schema.NullOr(Api),
  baseUrl: Schema.NullOr(Schema.String),
  builtin: Schema.NullOr(Schema.String),
  models: Jsonb(Schema.Array(ProviderModel)),
  apiKeySealed: Schema.String,
  headersSealed: Schema.NullOr(Schema.String),
  updatedBy: Schema.String,
  updatedAt: Timestamp
})
type Row = typeof Row.Type
const providerRows = decodeRows(Row)
const agentNames = decodeRows(Schema.Struct({ agentName: Schema.String }))

export class ProviderStore extends Context.Tag("providers/ProviderStore")<
  ProviderStore,
  {
    readonly list: Effect.Effect<ReadonlyArray<ProviderView>, StoreError>
    readonly get: (id: string) => Effect.Effect<ProviderView, ProviderNotFound | StoreError>
    readonly create: (input: unknown, by: string) => Effect.Effect<ProviderView, ProviderInvalid | ProviderExists | StoreError>
    /** Replaces the configuration of `id` with the one in `input`; an absent apiKey (or headers) keeps the stored one. */
    readonly update: (
      id: string,
      input: unknown,
      by: string
    ) => Effect.Effect<ProviderView, ProviderInvalid | ProviderNotFound | StoreError>
    readonly remove: (id: string) => Effect.Effect<void, ProviderNotFound | ProviderInUse | StoreError>
    /** pi-ai's built-in providers and their models, for choosing one. */
    readonly catalog: Effect.Effect<
      ReadonlyArray<{ readonly id: string; readonly name: string; readonly models: ReadonlyArray<ModelView> }>
    >
    /** "Test connection": asks the provider for its models with the stored key (providerProbe.ts). */
    readonly probe: (id: string) => Effect.Effect<ProbeResult, ProviderNotFound | StoreError>
    /** The decrypted configs of the given providers, for a job child's stdin only. */
    readonly configs: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ProviderConfig>, ProviderNotFound | StoreError>
  }
>() {}

/** The models a config offers, with the thinking levels pi-ai will accept for each. */
const modelsOf = async (config: ProviderConfig): Promise<Array<ModelView>> => {
  const { jobModels } = await makeJobModels([config])
  return jobModels.models.getModels(config.id).map((m) => ({
    id: m.id,
    contextWindow: m.contextWindow,
    maxTokens: m.maxTokens,
    thinkingLevels: supportedThinking(m),
    cost:
      m.cost === undefined
        ? null
        : { input: m.cost.input, output: m.cost.output, cacheRead: m.cost.cacheRead, cacheWrite: m.cost.cacheWrite }
  }))
}

type Catalog = ReadonlyArray<{ readonly id: string; readonly name: string; readonly models: ReadonlyArray<ModelView> }>
let catalogOnce: Promise<Catalog> | undefined
/** The release's catalog never changes while the process runs: built once, on first use. */
const builtinCatalog = (): Promise<Catalog> =>
  (catalogOnce ??= import("@earendil-works/pi-ai/providers/all").then(({ builtinProviders }) =>
    Promise.all(
      builtinProviders().map(async (p) => ({ id: p.id, name: p.name, models: await modelsOf({ id: p.id, builtin: p.id, apiKey: "" }) }))
    )
  ))

const decodeCreate = decodeAll(ProviderInput)
const decodeUpdate = decodeAll(ProviderUpdate)

export const makeProviderStore = Effect.gen(function* () {
  const sql = yield* SqlClient
  const box = yield* SecretBox

  const configOf = (row: Row, reveal: boolean): ProviderConfig => {
    const apiKey = reveal ? box.open(row.apiKeySealed) : ""
    if (row.kind === "builtin") return { id: row.id, builtin: row.builtin ?? "", apiKey }
    const headers = reveal && row.headersSealed !== null ? openHeaders(box, row.headersSealed) : undefined
    return {
      id: row.id,
      api: row.api ?? "openai-completions",
      baseUrl: row.baseUrl ?? "",
      apiKey,
      ...(headers === undefined ? {} : { headers }),
      models: row.models
    }
  }
  const headerNames = (row: Row): Array<string> => Object.keys(openHeaders(box, row.headersSealed)).sort()
  const viewOf = (row: Row) =>
    Effect.promise(
      async (): Promise<ProviderView> => ({
        id: row.id,
        kind: row.kind,
        api: row.api,
        baseUrl: row.baseUrl,
        builtin: row.builtin,
        models: await modelsOf(configOf(row, false)),
        hasApiKey: true,
        headerNames: headerNames(row),
        updatedBy: row.updatedBy,
        updatedAt: row.updatedAt
      })
    )
  const rows = (id?: string) =>
    providerRows(sql`SELECT id, kind, api, base_url, builtin, models, api_key_sealed, headers_sealed, updated_by, updated_at
             FROM admin.llm_provider ${id === undefined ? sql`` : sql`WHERE id = ${id}`} ORDER BY id`)
  const one = (id: string) =>
    Effect.flatMap(rows(id), (r) => (r[0] === undefined ? Effect.fail(new ProviderNotFound({ id })) : Effect.succeed(r[0])))

  /** Schema problems, then what only pi-ai knows (an unknown built-in provider). */
  const decode = <A extends { readonly kind: "custom" } | { readonly kind: "builtin"; readonly builtin: string }>(
    decodeInput: (input: unknown) => Either.Either<A, Array<Problem>>,
    input: unknown
  ): Effect.Effect<A, ProviderInvalid> =>
    Effect.gen(function* () {
      const decoded = decodeInput(input)
      if (Either.isLeft(decoded)) return yield* Effect.fail(new ProviderInvalid({ problems: decoded.left }))
      const p = decoded.right
      if (p.kind === "builtin") {
        const { problems } = yield* Effect.promise(() => makeJobModels([{ id: "check", builtin: p.builtin, apiKey: "" }]))
        if (problems.length > 0)
          return yield* Effect.fail(
            new ProviderInvalid({ problems: [{ path: "builtin", message: `unknown pi-ai provider "${p.builtin}"` }] })
          )
      }
      return p
    })
  const missingKey: Array<Problem> = [{ path: "apiKey", message: "is required for a new provider" }]

  const service: ProviderStore["Type"] = {
    list: storeMethod("ProviderStore.list", () => Effect.flatMap(rows(), (r) => Effect.forEach(r, viewOf)))(),
    get: storeMethod("ProviderStore.get", (id: string) => Effect.flatMap(one(id), viewOf)),
    create: storeMethod("ProviderStore.create", (input: unknown, by: string) =>
      Effect.gen(function* () {
        const p = yield* decode(decodeCreate, input)
        if (p.apiKey === undefined) return yield* Effect.fail(new ProviderInvalid({ problems: missingKey }))
        const inserted =
          p.kind === "custom"
            ? yield* sql`INSERT INTO admin.llm_provider (id, kind, api, base_url, models, api_key_sealed, headers_sealed, updated_by)
                VALUES (${p.id}, 'custom', ${p.api}, ${p.baseUrl}, ${JSON.stringify(p.models)}::jsonb, ${box.seal(p.apiKey)},
                        ${p.headers === undefined ? null : sealHeaders(box, p.headers)}, ${by})
                ON CONFLICT (id) DO NOTHING RETURNING id`
            : yield* sql`INSERT INTO admin.llm_provider (id, kind, builtin, api_key_sealed, updated_by)
                VALUES (${p.id}, 'builtin', ${p.builtin}, ${box.seal(p.apiKey)}, ${by}) ON CONFLICT (id) DO NOTHING RETURNING id`
        if (inserted.length === 0) return yield* Effect.fail(new ProviderExists({ id: p.id }))
        // The row was inserted just before: ProviderNotFound here would be a defect.
        return yield* viewOf(yield* Effect.orDie(one(p.id)))
      })
    ),
    update: storeMethod("ProviderStore.update", (id: string, input: unknown, by: string) =>
      Effect.gen(function* () {
        const p = yield* decode(decodeUpdate, input)
        const current = yield* one(id)
        const key = p.apiKey === undefined ? current.apiKeySealed : box.seal(p.apiKey)
        if (p.kind === "custom") {
          const headers = p.headers === undefined ? current.headersSealed : sealHeaders(box, p.headers)
          yield* sql`UPDATE admin.llm_provider SET kind = 'custom', api = ${p.api}, base_url = ${p.baseUrl}, builtin = NULL,
            models = ${JSON.stringify(p.models)}::jsonb, api_key_sealed = ${key}, headers_sealed = ${headers},
            updated_by = ${by}, updated_at = now() WHERE id = ${id}`
        } else {
          yield* sql`UPDATE admin.llm_provider SET kind = 'builtin', api = NULL, base_url = NULL, builtin = ${p.builtin},
            models = '[]'::jsonb, api_key_sealed = ${key}, headers_sealed = NULL, updated_by = ${by}, updated_at = now() WHERE id = ${id}`
        }
        // The row was read and updated just before: ProviderNotFound here would be a defect.
        return yield* viewOf(yield* Effect.orDie(one(id)))
      })
    ),
    remove: storeMethod("ProviderStore.remove", (id: string) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* one(id)
          const bound = yield* agentNames(
            sql`SELECT DISTINCT agent_name FROM admin.agent_binding WHERE provider_id = ${id} ORDER BY agent_name`
          )
          if (bound.length > 0) return yield* Effect.fail(new ProviderInUse({ id, agents: bound.map((b) => b.agentName) }))
          yield* sql`DELETE FROM admin.llm_provider WHERE id = ${id}`
        })
      )
    ),
    catalog: Effect.promise(builtinCatalog),
    probe: storeMethod("ProviderStore.probe", (id: string) =>
      Effect.flatMap(one(id), (row) =>
        Effect.promise(() => probeProvider(configOf(row, true), { allowPrivateNetwork: row.kind === "custom" }))
      )
    ),
    configs: storeMethod("ProviderStore.configs", (ids: ReadonlyArray<string>) =>
      Effect.forEach([...new Set(ids)], (id) => Effect.map(one(id), (row) => configOf(row, true)))
    )
  }
  return service
})

export const ProviderStoreLive = Layer.effect(
  ProviderStore,
  Effect.map(makeProviderStore, (service) => traced("ProviderStore", service))
)
