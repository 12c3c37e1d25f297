/** Version history of a custom agent: the list, one version, restore, and the line diff of any two versions. */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { AgentStore, type VersionInfo } from "../../agents/AgentStore.ts"
import { SkillStore } from "../../agents/SkillStore.ts"
import { diffView, versionPage, versionsBody, versionsPage, type DiffProps } from "../../../views/pages/versions.ts"
import { badRequest, type ApiError } from "../respond.ts"
import { nameParam } from "./agentPage.ts"
import { diffFiles } from "../../../views/forms/lineDiff.ts"
import { htmlResponse, inPlace, isHtmx, noticeOf, noticeText, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const positive = (raw: string | null | undefined, path: string): Effect.Effect<number, ApiError> => {
  const n = Number(raw)
  return raw !== null && raw !== undefined && Number.isInteger(n) && n > 0
    ? Effect.succeed(n)
    : Effect.fail(badRequest([{ path, message: `"${raw ?? ""}" is not a version number` }]))
}

const agentUrl = (name: string, rest = "") => `/agents/${encodeURIComponent(name)}${rest}`

/** A built-in has no history: its pages send the visitor to the agent itself. */
const orBuiltin = <R>(input: PortalInput, e: Effect.Effect<Response, ApiError, R>) =>
  Effect.catchIf(
    e,
    (x) => x._tag === "BuiltinReadOnly",
    () => Effect.succeed(redirect(input.request, agentUrl(nameParam(input))))
  )

const diffOf = (name: string, from: number, to: number) =>
  Effect.gen(function* () {
    const store = yield* AgentStore
    const [a, b] = yield* Effect.all([store.version(name, from), store.version(name, to)])
    const diff: DiffProps = { from, to, files: diffFiles(a.view.files, b.view.files) }
    return diff
  })

/** The restores and the edits of the shared skills the current version lists, since the agent's first version. */
const historyExtras = (name: string, versions: ReadonlyArray<VersionInfo>) =>
  Effect.gen(function* () {
    const store = yield* AgentStore
    const agent = yield* store.get(name)
    const restores = yield* store.restores(name)
    const first = versions.reduce<Date | null>((min, v) => (min === null || v.savedAt < min ? v.savedAt : min), null)
    const skillChanges = first === null ? [] : yield* Effect.flatMap(SkillStore, (s) => s.changesSince(agent.package.skills ?? [], first))
    return { restores, skillChanges }
  })

export const versionPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agents/:name/versions",
      portal.page("read", (input) =>
        orBuiltin(
          input,
          Effect.gen(function* () {
            const store = yield* AgentStore
            const agent = yield* store.get(nameParam(input))
            const versions = yield* store.versions(agent.name)
            return htmlResponse(
              versionsPage(input.page, {
                agent,
                versions,
                diff: null,
                notice: noticeOf(input.url, agent.name),
                ...(yield* historyExtras(agent.name, versions))
              })
            )
          })
        )
      )
    )
    .get(
      "/agents/:name/versions/:version",
      portal.page("read", (input) =>
        orBuiltin(
          input,
          Effect.gen(function* () {
            const store = yield* AgentStore
            const v = yield* positive(input.params["version"], "version")
            const agent = yield* store.get(nameParam(input))
            const { info, view } = yield* store.version(agent.name, v)
            return htmlResponse(versionPage(input.page, agent, info, view))
          })
        )
      )
    )
    .post(
      "/agents/:name/versions/:version/restore",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const v = yield* positive(input.params["version"], "version")
          const store = yield* AgentStore
          const agent = yield* store.restore(nameParam(input), v, input.principal.username)
          const body = Effect.gen(function* () {
            const versions = yield* store.versions(agent.name)
            const props = {
              agent,
              versions,
              diff: null,
              notice: noticeText("restored", String(v), agent.name),
              ...(yield* historyExtras(agent.name, versions))
            }
            return versionsBody(input.page, props)
          })
          return yield* inPlace(input.request, agentUrl(agent.name, `/versions?restored=${v}`), body)
        })
      )
    )
    .get(
      "/agents/:name/diff",
      portal.page("read", (input) =>
        orBuiltin(
          input,
          Effect.gen(function* () {
            const from = yield* positive(input.url.searchParams.get("from"), "from")
            const to = yield* positive(input.url.searchParams.get("to"), "to")
            const diff = yield* diffOf(nameParam(input), from, to)
            if (isHtmx(input.request)) return htmlResponse(diffView(diff))
            const store = yield* AgentStore
            const agent = yield* store.get(nameParam(input))
            const versions = yield* store.versions(agent.name)
            return htmlResponse(
              versionsPage(input.page, { agent, versions, diff, notice: null, ...(yield* historyExtras(agent.name, versions)) })
            )
          })
        )
      )
    )
