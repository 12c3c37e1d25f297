/**
 * An agent's model bindings in the portal, through Bindings (which checks provider, model and
 * thinking level against ProviderStore), and the thinking-select fragment for a chosen model.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { AgentStore } from "../../agents/AgentStore.ts"
import type { Problem } from "../../contract/Problem.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import { Projects } from "../../worker/Projects.ts"
import {
  bindingsBody,
  bindingsPage,
  levelsFor,
  parseTarget,
  targetOf,
  thinkingField,
  type BindingFormValues,
  type BindingsProps
} from "../../../views/pages/bindings.ts"
import { htmlResponse, inPlace, noticeOf, noticeText, pageOrBody } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const text = (f: PortalInput["form"], name: string): string => {
  const v = f.get(name)
  return typeof v === "string" ? v.trim() : ""
}

/** Every project, for "applies to" selects. */
export const projects = Effect.flatMap(Projects, (p) => p.list)

/** The page's props with `values` in the form (defaults: the installation binding, else the first model). */
const propsOf = (input: PortalInput, values: BindingFormValues | null, problems: ReadonlyArray<Problem>, notice: string | null = null) =>
  Effect.gen(function* () {
    const agent = yield* (yield* AgentStore).get(input.params["name"] ?? "")
    const bindings = yield* (yield* Bindings).list(agent.name)
    const providers = yield* (yield* ProviderStore).list
    const first = providers.flatMap((p) => p.models.map((m) => targetOf(p.id, m.id)))[0] ?? ""
    const current = bindings.find((b) => b.projectId === "")
    const defaults: BindingFormValues =
      current === undefined
        ? { project: "", target: first, thinking: "" }
        : { project: "", target: targetOf(current.providerId, current.modelId), thinking: current.thinking ?? "" }
    const props: BindingsProps = {
      agent,
      bindings,
      providers,
      projects: yield* projects,
      values: values ?? defaults,
      problems,
      notice: notice ?? noticeOf(input.url, agent.name)
    }
    return props
  })

/** The page (a GET), or a refused change: for htmx (made in place) the page's body. */
const render = (input: PortalInput, values: BindingFormValues | null, problems: ReadonlyArray<Problem>, status = 200) =>
  Effect.map(propsOf(input, values, problems), (props) =>
    input.request.method === "GET"
      ? htmlResponse(bindingsPage(input.page, props), status)
      : pageOrBody(
          input.request,
          () => bindingsPage(input.page, props),
          () => bindingsBody(input.page, props),
          status
        )
  )

/** After a change: the page's new body with the notice `key` asks for (htmx), else a redirect to the page asking for it. */
const changed = (input: PortalInput, agent: string, key: string, value: string) =>
  inPlace(
    input.request,
    `/agents/${encodeURIComponent(agent)}/binding?${key}=${encodeURIComponent(value)}`,
    Effect.map(propsOf(input, null, [], noticeText(key, value, agent)), (props) => bindingsBody(input.page, props))
  )

export const bindingPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agents/:name/binding",
      portal.page("read", (input) => render(input, null, []))
    )
    .get(
      "/bindings/-/thinking",
      portal.page("read", ({ url }) =>
        Effect.map(
          Effect.flatMap(ProviderStore, (s) => s.list),
          (providers) =>
            htmlResponse(thinkingField(levelsFor(providers, url.searchParams.get("target") ?? ""), url.searchParams.get("thinking") ?? ""))
        )
      )
    )
    .post(
      "/agents/:name/binding",
      portal.action("providers.manage", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(input.params["name"] ?? "")
          const values: BindingFormValues = {
            project: text(input.form, "project"),
            target: text(input.form, "target"),
            thinking: text(input.form, "thinking")
          }
          const { providerId, modelId } = parseTarget(values.target)
          const body = { providerId, modelId, ...(values.thinking === "" ? {} : { thinking: values.thinking }) }
          return yield* (yield* Bindings).set(agent.name, values.project, body, input.principal.username).pipe(
            Effect.flatMap((b) => changed(input, agent.name, "bound", targetOf(b.providerId, b.modelId))),
            Effect.catchTag("BindingInvalid", (e) => render(input, values, e.problems, 400))
          )
        })
      )
    )
    .post(
      "/agents/:name/binding/delete",
      portal.action("providers.manage", (input) =>
        Effect.gen(function* () {
          const name = input.params["name"] ?? ""
          const project = text(input.form, "project")
          yield* (yield* Bindings).remove(name, project)
          return yield* changed(input, name, "removed", project === "" ? "the installation default" : `project ${project}`)
        })
      )
    )
