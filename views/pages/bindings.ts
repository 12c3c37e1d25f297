/**
 * An agent's model bindings: the installation default and per-project overrides, each naming a
 * provider model and a default thinking level. The thinking select offers only the chosen model's
 * levels; it is re-rendered (an htmx fragment) whenever the model changes.
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import type { Binding } from "../../src/providers/Bindings.ts"
import type { ProviderView } from "../../src/providers/ProviderStore.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import {
  agentHref,
  alert,
  canManageProviders,
  emptyState,
  fieldProblems,
  generalProblems,
  placedSummary,
  postInPlace,
  time
} from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { agentHeader } from "./agentHeader.ts"

/** `provider/model`: provider ids never contain a slash, so the first one separates them. */
export const targetOf = (providerId: string, modelId: string): string => `${providerId}/${modelId}`
export const parseTarget = (target: string): { readonly providerId: string; readonly modelId: string } => {
  const i = target.indexOf("/")
  return i < 0 ? { providerId: target, modelId: "" } : { providerId: target.slice(0, i), modelId: target.slice(i + 1) }
}

/** The levels the model behind `target` supports (none when it is unknown). */
export const levelsFor = (providers: ReadonlyArray<ProviderView>, target: string): ReadonlyArray<string> => {
  const { providerId, modelId } = parseTarget(target)
  return providers.find((p) => p.id === providerId)?.models.find((m) => m.id === modelId)?.thinkingLevels ?? []
}

/** The thinking field: "the agent's own default" and exactly the levels given. */
export const thinkingField = (levels: ReadonlyArray<string>, current: string, problems: ReadonlyArray<Problem> = []): Html => html`
  <div class="field" id="thinking-field">
    <label for="f-thinking">Default thinking</label>
    <select id="f-thinking" name="thinking" aria-describedby="problems-thinking">
      <option value="">the agent's own setting</option>
      ${levels.map((l) => html`<option value="${l}"${l === current ? html` selected` : html``}>${l}</option>`)}
    </select>
    ${fieldProblems("thinking", problems)}
  </div>`

export interface BindingFormValues {
  readonly project: string
  readonly target: string
  readonly thinking: string
}

export interface BindingsProps {
  readonly agent: AgentView
  readonly bindings: ReadonlyArray<Binding>
  readonly providers: ReadonlyArray<ProviderView>
  readonly projects: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly values: BindingFormValues
  readonly problems: ReadonlyArray<Problem>
  readonly notice: string | null
}

const BINDING_LABELS: Readonly<Record<string, string>> = { target: "Model", thinking: "Default thinking", general: "Binding" }

const slotOf = (p: Problem): string =>
  p.path === "providerId" || p.path === "modelId" ? "target" : p.path === "thinking" ? "thinking" : "general"

const bindingForm = (ctx: PageContext, props: BindingsProps): Html => {
  const at = (slot: string) => props.problems.filter((p) => slotOf(p) === slot)
  const { values } = props
  if (props.providers.length === 0)
    return emptyState("No LLM provider yet.", html`Add one under <a href="/providers">LLM providers</a> first.`)
  return html`
  <form method="post" action="${agentHref(props.agent.name, "/binding")}"${postInPlace(agentHref(props.agent.name, "/binding"))} class="stack card" novalidate data-unsaved-guard>
    <h2>Set a binding</h2>
    ${csrfField(ctx)}
    ${placedSummary(
      props.problems.map((p) => [slotOf(p), p] as const),
      BINDING_LABELS,
      "binding-general"
    )}
    ${generalProblems("binding-general", at("general"))}
    <div class="field"><label for="f-project">Applies to</label>
      <select id="f-project" name="project">
        <option value="">every project (installation default)</option>
        ${props.projects.map((p) => html`<option value="${p.id}"${values.project === p.id ? html` selected` : html``}>project ${p.name} (${p.id})</option>`)}
      </select></div>
    <div class="field"><label for="f-target">Model</label>
      <select id="f-target" name="target" aria-describedby="problems-target" hx-get="/bindings/-/thinking" hx-trigger="change" hx-target="#thinking-field" hx-swap="outerHTML">
        ${props.providers.map(
          (p) =>
            html`<optgroup label="${p.id}">${p.models.map((m) => {
              const t = targetOf(p.id, m.id)
              return html`<option value="${t}"${values.target === t ? html` selected` : html``}>${p.id} / ${m.id}</option>`
            })}</optgroup>`
        )}
      </select>
      ${fieldProblems("target", at("target"))}</div>
    ${thinkingField(levelsFor(props.providers, values.target), values.thinking, at("thinking"))}
    <div class="save-bar"><button type="submit" class="primary">Save binding</button></div>
  </form>`
}

/** Everything inside `<main>` of the bindings page (what setting or removing a binding swaps in). */
export const bindingsBody = (ctx: PageContext, props: BindingsProps): Html => {
  const manage = canManageProviders(ctx.viewer)
  return html`
  ${agentHeader(ctx, props.agent, "model", props.notice)}
  ${manage ? html`` : alert("info", "Changing bindings needs the providers.manage permission.")}
  <section class="card">
    <h2>Bindings</h2>
    <p class="muted">A job uses its project's binding, else the installation default. A change applies to the next job.</p>
    ${
      props.bindings.length === 0
        ? emptyState("Not bound.", "Jobs of this agent cannot start until it has a model.")
        : html`<table class="catalog"><thead><tr><th scope="col">Applies to</th><th scope="col">Model</th><th scope="col">Thinking</th><th scope="col">Updated</th>${manage ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : html``}</tr></thead>
        <tbody>${props.bindings.map(
          // User text inside hx-disable cells; the actions cell stays live for its in-place Remove.
          (b) => html`<tr>
            <td data-label="Applies to" hx-disable>${b.projectId === "" ? "installation default" : `project ${b.projectId}`}</td>
            <td data-label="Model" hx-disable><code>${b.providerId} / ${b.modelId}</code></td>
            <td data-label="Thinking" hx-disable>${b.thinking ?? html`<span class="muted">agent's own</span>`}</td>
            <td data-label="Updated" hx-disable>${time(b.updatedAt)} by ${b.updatedBy}</td>
            ${
              manage
                ? html`<td class="row-actions"><form method="post" action="${agentHref(props.agent.name, "/binding/delete")}"${postInPlace(agentHref(props.agent.name, "/binding/delete"))} class="inline">${csrfField(ctx)}<input type="hidden" name="project" value="${b.projectId}"><button type="submit" class="small secondary">Remove</button></form></td>`
                : html``
            }
          </tr>`
        )}</tbody></table>`
    }
  </section>
  ${manage ? bindingForm(ctx, props) : html``}`
}

export const bindingsPage = (ctx: PageContext, props: BindingsProps): Html =>
  layout(ctx, `${props.agent.name}: model`, bindingsBody(ctx, props))
