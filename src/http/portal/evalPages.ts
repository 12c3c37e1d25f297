/** The agent's Evaluations tab (docs/evals.md): run a version's evals; two versions' latest runs side by side. */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { AgentStore, type AgentView } from "../../agents/AgentStore.ts"
import { Evals } from "../../worker/evals/Evals.ts"
import { evalsPage, type EvalSide } from "../../../views/pages/evals.ts"
import { badRequest, type ApiError } from "../respond.ts"
import { nameParam } from "./agentPage.ts"
import { htmlResponse, redirect } from "./pageResponse.ts"
import type { PortalRunner } from "./portalRoute.ts"

/** The versions that can be evaluated, newest first: a built-in has its release's only. */
const versionsOf = (agent: AgentView): Effect.Effect<ReadonlyArray<{ version: number; current: boolean }>, ApiError, AgentStore> =>
  agent.builtin
    ? Effect.succeed([{ version: agent.version, current: true }])
    : Effect.map(
        Effect.flatMap(AgentStore, (s) => s.versions(agent.name)),
        (vs) => vs.map((v) => ({ version: v.version, current: v.current }))
      )

/** `raw` when it names one of `versions`, else `fallback`. */
const chosen = (raw: string | null, versions: ReadonlyArray<{ version: number }>, fallback: number): number => {
  const n = Number(raw)
  return raw !== null && versions.some((v) => v.version === n) ? n : fallback
}

const sideOf = (name: string, version: number): Effect.Effect<EvalSide, never, Evals> =>
  Effect.map(
    Effect.flatMap(Evals, (e) => e.runs(name, version)),
    (runs) => ({ version, run: runs[0] })
  )

export const evalPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agents/:name/evals",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(nameParam(input))
          const versions = yield* versionsOf(agent)
          // Default: the pending gated version (or the current one) on the right, the one before on the left.
          const right = chosen(input.url.searchParams.get("b"), versions, agent.gate?.version ?? agent.version)
          const left = chosen(input.url.searchParams.get("a"), versions, versions.find((v) => v.version < right)?.version ?? right)
          const started = input.url.searchParams.get("started")
          return htmlResponse(
            evalsPage(input.page, {
              agent,
              versions,
              a: yield* sideOf(agent.name, left),
              b: yield* sideOf(agent.name, right),
              notice: started === null ? null : `Started the evals of version ${started.slice(0, 20)}. Results appear as their jobs finish.`
            })
          )
        })
      )
    )
    .post(
      "/agents/:name/evals",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const raw = input.form.get("version")
          const version = Number(raw)
          if (typeof raw !== "string" || !Number.isInteger(version) || version <= 0) {
            return yield* Effect.fail<ApiError>(badRequest([{ path: "version", message: "choose a version" }]))
          }
          const name = nameParam(input)
          const agent = yield* (yield* AgentStore).get(name)
          yield* (yield* Evals).start(name, version, input.principal.username)
          // The run goes on the right, the version before it (when there is one) on the left.
          const versions = yield* versionsOf(agent)
          const left = versions.find((v) => v.version < version)?.version ?? version
          return redirect(input.request, `/agents/${encodeURIComponent(name)}/evals?a=${left}&b=${version}&started=${version}`)
        })
      )
    )
