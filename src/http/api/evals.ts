/**
 * Agent evaluations (docs/evals.md): start a run of a version's evals (202, the run; its results arrive
 * as its jobs settle), list a version's runs, read one run.
 */
import { Effect, Schema } from "effect"
import { Elysia } from "elysia"
import { AgentStore } from "../../agents/AgentStore.ts"
import { versionParam } from "./agents.ts"
import { Evals } from "../../worker/evals/Evals.ts"
import { json } from "../respond.ts"
import { decodeBody, param, type Handler, type RouteInput } from "../route.ts"
import type { Guard } from "../auth.ts"

const StartBody = Schema.Struct({
  /** The project the eval jobs run in (its binding, its root); default: the reserved eval project. */
  project: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })), { exact: true })
})

/** The agent and version exist (404 otherwise): a list of runs of nothing is not an empty list. */
const existing = (input: RouteInput) =>
  Effect.gen(function* () {
    const version = yield* versionParam(input)
    yield* (yield* AgentStore).exportPackage(param(input, "name"), version)
    return version
  })

export const evalRoutes = (
  route: (guard: Guard, handler: Handler) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>
) =>
  new Elysia({ name: "agent-evals-api" })
    .post(
      "/api/admin/agents/:name/versions/:version/evals",
      route("agents.manage", (i) =>
        Effect.gen(function* () {
          const version = yield* versionParam(i)
          // An empty body is `{}`: every option has a default.
          const body = i.request.body === null ? {} : yield* decodeBody(i.request, StartBody)
          const run = yield* (yield* Evals).start(param(i, "name"), version, i.principal.username, body)
          return json({ run }, 202, { location: `/api/admin/eval-runs/${run.id}` })
        })
      )
    )
    .get(
      "/api/admin/agents/:name/versions/:version/evals",
      route("read", (i) =>
        Effect.gen(function* () {
          const version = yield* existing(i)
          return json({ runs: yield* (yield* Evals).runs(param(i, "name"), version) })
        })
      )
    )
    .get(
      "/api/admin/agents/:name/evals",
      route("read", (i) =>
        Effect.gen(function* () {
          yield* (yield* AgentStore).get(param(i, "name"))
          return json({ runs: yield* (yield* Evals).runs(param(i, "name")) })
        })
      )
    )
    .get(
      "/api/admin/eval-runs/:id",
      route("read", (i) =>
        Effect.map(
          Effect.flatMap(Evals, (e) => e.run(param(i, "id"))),
          (run) => json({ run })
        )
      )
    )
