/**
 * Job-scoped bearer tokens of the services channel (design/memory-and-web.md §1). A token is minted
 * for one job when it is granted memory or web tools, stored only as its SHA-256, bound to (job,
 * project, agent, memory role, granted tools), and accepted only while its job is `running`: it is dead
 * once the job settles, whichever serve process settles it.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { decodeRows, Jsonb } from "../db/rowSchema.ts"
import { traced } from "../telemetry/traced.ts"

/** What a token was minted for; the service checks every call against it. */
export interface ServiceGrant {
  readonly jobId: string
  readonly projectId: string
  readonly agentId: string
  /** `reviewer`: an independent reviewer (memory-role in the agent's package metadata). */
  readonly memoryRole: "reviewer" | null
  /** The service tools the job was granted at its start. */
  readonly tools: ReadonlyArray<string>
}

/** No token, an unknown one, or the token of a job that is no longer running. */
export class ServiceUnauthorized extends Schema.TaggedError<ServiceUnauthorized>()("ServiceUnauthorized", {}) {
  override get message(): string {
    return "the services token is missing, unknown or belongs to a job that is no longer running"
  }
}

const hash = (token: string) => createHash("sha256").update(token).digest("hex")

export class ServiceTokens extends Context.Tag("worker/ServiceTokens")<
  ServiceTokens,
  {
    /** A fresh random token for the job (returned once, stored hashed). */
    readonly mint: (grant: ServiceGrant) => Effect.Effect<string>
    /** The grant of a token whose job is running; never reveals why another token fails. */
    readonly verify: (token: string) => Effect.Effect<ServiceGrant, ServiceUnauthorized>
    /** Deletes the job's tokens (at settle; verify refuses them already once the job is not running). */
    readonly revoke: (jobId: string) => Effect.Effect<void>
  }
>() {}

const tokenRows = decodeRows(
  Schema.Struct({
    jobId: Schema.String,
    projectId: Schema.String,
    agentId: Schema.String,
    memoryRole: Schema.NullOr(Schema.String),
    tools: Jsonb(Schema.Array(Schema.String))
  })
)

const makeServiceTokens: Effect.Effect<ServiceTokens["Type"], never, SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient
  return {
    mint: (grant) =>
      Effect.gen(function* () {
        const token = `kst_${randomBytes(32).toString("base64url")}`
        // Minting runs in a job's setup, whose shape has no store failure: a token that cannot be stored is a defect.
        yield* Effect.orDie(sql`INSERT INTO runtime.service_token (token_hash, job_id, project_id, agent_id, memory_role, tools)
          VALUES (${hash(token)}, ${grant.jobId}, ${grant.projectId}, ${grant.agentId}, ${grant.memoryRole}, ${JSON.stringify(grant.tools)}::jsonb)`)
        return token
      }),
    verify: (token) =>
      Effect.gen(function* () {
        if (!/^kst_[A-Za-z0-9_-]{43}$/.test(token)) return yield* Effect.fail(new ServiceUnauthorized())
        // verify answers only ServiceUnauthorized to the job's own calls: a store failure there is a defect (500), never a 401.
        const rows = yield* Effect.orDie(
          tokenRows(sql`SELECT t.job_id, t.project_id, t.agent_id, t.memory_role, t.tools
          FROM runtime.service_token t JOIN runtime.job j ON j.id = t.job_id
          WHERE t.token_hash = ${hash(token)} AND j.status = 'running'`)
        )
        const row = rows[0]
        if (row === undefined) return yield* Effect.fail(new ServiceUnauthorized())
        return { ...row, memoryRole: row.memoryRole === "reviewer" ? "reviewer" : null, tools: [...row.tools] }
      }),
    // Revoking runs in a job's settlement, which cannot fail; the token dies with its job's status anyway.
    revoke: (jobId) => Effect.asVoid(Effect.orDie(sql`DELETE FROM runtime.service_token WHERE job_id = ${jobId}`))
  }
})

export const ServiceTokensLive: Layer.Layer<ServiceTokens, never, SqlClient> = Layer.effect(
  ServiceTokens,
  Effect.map(makeServiceTokens, (s) => traced("ServiceTokens", s))
)
