/**
 * Agent bindings: which provider model an agent id uses — an installation default per agent
 * (project ''), overridable per project — and its default thinking level, limited to the levels the
 * model supports. A change applies to the next job: the worker resolves the binding at job start.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { decodeAll } from "../contract/Problem.ts"
import { decodeRows, Timestamp } from "../db/rowSchema.ts"
import { BindingInvalid, BindingNotFound } from "./errors.ts"
import { ProviderStore } from "./ProviderStore.ts"
import { traced } from "../telemetry/traced.ts"

const BindingInput = Schema.Struct({
  providerId: Schema.String,
  modelId: Schema.String,
  thinking: Schema.optionalWith(Schema.NullOr(ThinkingLevel), { exact: true })
})

const BindingRow = Schema.Struct({
  agentName: Schema.String,
  /** '' = the installation default. */
  projectId: Schema.String,
  providerId: Schema.String,
  modelId: Schema.String,
  thinking: Schema.NullOr(ThinkingLevel),
  updatedBy: Schema.String,
  updatedAt: Timestamp
})
export type Binding = typeof BindingRow.Type
const bindingRows = decodeRows(BindingRow)

export class Bindings extends Context.Tag("providers/Bindings")<
  Bindings,
  {
    readonly list: (agentName?: string) => Effect.Effect<ReadonlyArray<Binding>>
    /** Sets the binding of an agent for a project ('' = installation default), checked against the provider's models. */
    readonly set: (agentName: string, projectId: string, input: unknown, by: string) => Effect.Effect<Binding, BindingInvalid>
    readonly remove: (agentName: string, projectId: string) => Effect.Effect<void, BindingNotFound>
    /** The project's binding, else the installation default. */
    readonly resolve: (agentName: string, projectId: string) => Effect.Effect<Binding, BindingNotFound>
  }
>() {}

const makeBindings = Effect.gen(function* () {
  const sql = yield* SqlClient
  const providers = yield* ProviderStore
  const select = (agentName?: string, projectId?: string) =>
    bindingRows(sql`SELECT agent_name, project_id, provider_id, model_id, thinking, updated_by, updated_at FROM admin.agent_binding
      WHERE true ${agentName === undefined ? sql`` : sql`AND agent_name = ${agentName}`}
      ${projectId === undefined ? sql`` : sql`AND project_id = ${projectId}`}
      ORDER BY agent_name, project_id`)

  // The catalog's callers (agents, admission, job set-up, evals) take only domain errors from bindings:
  // SQL and row failures stay defects here.
  const service: Bindings["Type"] = {
    // Bindings' shape has no database failure (the catalog and job setup read it): a store failure is a defect.
    list: (agentName) => select(agentName).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die })),
    set: (agentName, projectId, input, by) =>
      Effect.gen(function* () {
        const decoded = decodeAll(BindingInput)(input)
        if (Either.isLeft(decoded)) return yield* Effect.fail(new BindingInvalid({ problems: decoded.left }))
        const b = decoded.right
        // Only a missing provider is the client's mistake; a store failure stays a failure, not "no provider".
        const provider = yield* Effect.either(
          Effect.catchTags(providers.get(b.providerId), { StoreUnavailable: Effect.die, RowInvalid: Effect.die })
        )
        if (Either.isLeft(provider))
          return yield* Effect.fail(
            new BindingInvalid({ problems: [{ path: "providerId", message: `no LLM provider "${b.providerId}"` }] })
          )
        const model = provider.right.models.find((m) => m.id === b.modelId)
        if (model === undefined)
          return yield* Effect.fail(
            new BindingInvalid({ problems: [{ path: "modelId", message: `provider "${b.providerId}" has no model "${b.modelId}"` }] })
          )
        const thinking = b.thinking ?? null
        if (thinking !== null && !model.thinkingLevels.includes(thinking)) {
          return yield* Effect.fail(
            new BindingInvalid({
              problems: [{ path: "thinking", message: `model "${b.modelId}" supports ${model.thinkingLevels.join(", ")}` }]
            })
          )
        }
        yield* sql`INSERT INTO admin.agent_binding (agent_name, project_id, provider_id, model_id, thinking, updated_by)
          VALUES (${agentName}, ${projectId}, ${b.providerId}, ${b.modelId}, ${thinking}, ${by})
          ON CONFLICT (agent_name, project_id) DO UPDATE SET provider_id = EXCLUDED.provider_id, model_id = EXCLUDED.model_id,
            thinking = EXCLUDED.thinking, updated_by = EXCLUDED.updated_by, updated_at = now()`
        const rows = yield* select(agentName, projectId)
        // The upsert above wrote this row in the same session: none is a bug.
        return rows[0] ?? (yield* Effect.dieMessage("a binding just written is gone"))
        // Bindings' shape has no database failure (the catalog and job setup read it): a store failure is a defect.
      }).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die })),
    remove: (agentName, projectId) =>
      Effect.gen(function* () {
        const deleted =
          yield* sql`DELETE FROM admin.agent_binding WHERE agent_name = ${agentName} AND project_id = ${projectId} RETURNING agent_name`
        if (deleted.length === 0) return yield* Effect.fail(new BindingNotFound({ agent: agentName, projectId }))
        // Bindings' shape has no database failure (the catalog and job setup read it): a store failure is a defect.
      }).pipe(Effect.catchTag("SqlError", Effect.die)),
    resolve: (agentName, projectId) =>
      Effect.gen(function* () {
        const rows =
          yield* bindingRows(sql`SELECT agent_name, project_id, provider_id, model_id, thinking, updated_by, updated_at FROM admin.agent_binding
          WHERE agent_name = ${agentName} AND project_id IN (${projectId}, '') ORDER BY project_id DESC LIMIT 1`)
        if (rows[0] === undefined) return yield* Effect.fail(new BindingNotFound({ agent: agentName, projectId }))
        return rows[0]
        // Bindings' shape has no database failure (the catalog and job setup read it): a store failure is a defect.
      }).pipe(Effect.catchTags({ SqlError: Effect.die, ParseError: Effect.die }))
  }
  return service
})

export const BindingsLive = Layer.effect(
  Bindings,
  Effect.map(makeBindings, (service) => traced("Bindings", service))
)
