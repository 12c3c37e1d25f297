/**
 * LLM providers (Admin → LLM Providers): the list, the custom-provider form with model rows, the
 * built-in provider form, deletion. Keys are write-only: a password field that is never filled in,
 * and "a key is stored" as the only thing ever said about one.
 */
import { THINKING_LEVELS } from "../../src/contract/AgentDefinition.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { Binding } from "../../src/providers/Bindings.ts"
import type { ModelView, ProviderView } from "../../src/providers/ProviderStore.ts"
import type { CustomForm, ModelRow } from "../forms/providerForm.ts"
import type { ProbeResult } from "../../src/providers/providerProbe.ts"
import {
  agentHref,
  alert,
  badge,
  canManageProviders,
  emptyState,
  errorSummary,
  fieldProblems,
  NAME_RULES,
  pageHeader,
  problemList,
  providerHref,
  slotId,
  time,
  usd
} from "../components.ts"
import { plainMessage } from "../forms/plainProblems.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export type Placed = ReadonlyMap<string, ReadonlyArray<Problem>>
export interface CatalogEntry {
  readonly id: string
  readonly name: string
  readonly models: ReadonlyArray<ModelView>
}

const API_LABELS: ReadonlyArray<readonly [string, string]> = [
  ["openai-completions", "OpenAI-compatible (chat completions)"],
  ["openai-responses", "OpenAI responses"],
  ["anthropic-messages", "Anthropic-compatible (messages)"]
]

const readOnlyNote = (ctx: PageContext): Html =>
  canManageProviders(ctx.viewer)
    ? html``
    : alert("info", "You can read the LLM providers; changing them needs the providers.manage permission.")

export const providersPage = (ctx: PageContext, providers: ReadonlyArray<ProviderView>, notice: string | null): Html =>
  layout(
    ctx,
    "LLM providers",
    html`
  ${pageHeader("LLM providers", {
    meta: html`<p class="muted">The model endpoints jobs use. Bind an agent to one of their models on the agent's Model tab.</p>`,
    actions: canManageProviders(ctx.viewer)
      ? html`<a class="button primary" href="/providers/-/new">Add custom provider</a> <a class="button secondary" href="/providers/-/builtin">Add built-in provider</a>`
      : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${readOnlyNote(ctx)}
  ${
    providers.length === 0
      ? emptyState(
          "No LLM provider yet.",
          "Add an OpenAI- or Anthropic-compatible endpoint, or one of the built-in providers, to run jobs."
        )
      : html`<table class="catalog">
      <thead><tr><th scope="col">Provider</th><th scope="col">Kind</th><th scope="col">Models</th><th scope="col">API key</th><th scope="col">Updated</th></tr></thead>
      <tbody hx-disable>${providers.map(
        (p) => html`<tr>
          <td data-label="Provider"><div><a class="agent-name" href="${providerHref(p.id)}">${p.id}</a><div class="description">${p.kind === "custom" ? p.baseUrl : `built-in: ${p.builtin ?? ""}`}</div></div></td>
          <td data-label="Kind">${p.kind === "custom" ? badge("info", p.api ?? "custom") : badge("muted", "built-in")}</td>
          <td data-label="Models">${p.models.length}</td>
          <td data-label="API key">${p.hasApiKey ? badge("ok", "stored") : badge("warn", "missing")}</td>
          <td data-label="Updated">${time(p.updatedAt)} by ${p.updatedBy}</td>
        </tr>`
      )}</tbody></table>`
  }`
  )

const checked = (on: boolean): Html => (on ? html` checked` : html``)

const MODEL_FIELD_LABELS: Readonly<Record<string, string>> = {
  id: "Model id",
  contextWindow: "Context window",
  maxTokens: "Max output tokens",
  thinkingLevels: "Thinking levels",
  thinking: "Thinking levels",
  cost: "Prices",
  input: "Input price",
  output: "Output price",
  cacheRead: "Cache read price",
  cacheWrite: "Cache write price"
}

/** A model row's problem named by its field, in plain words: "Context window: enter a whole number". */
const modelProblem = (p: Problem): Problem => {
  const field =
    p.path
      .split(".")
      .filter((x) => !/^\d+$/.test(x) && x !== "models")
      .pop() ?? ""
  const label = MODEL_FIELD_LABELS[field]
  return { path: p.path, message: label === undefined ? plainMessage(p.message) : `${label}: ${plainMessage(p.message)}` }
}

const FIELD_LABELS: Readonly<Record<string, string>> = {
  id: "Provider id",
  api: "API",
  baseUrl: "Base URL",
  apiKey: "API key",
  builtin: "Built-in provider",
  models: "Models",
  general: "Provider"
}

/** Every placed problem as a summary line linking to its slot (model rows by their field). */
const providerSummary = (problems: Placed): Html =>
  errorSummary(
    [...problems.entries()].flatMap(([slot, list]) =>
      list.map((p) =>
        slot.startsWith("row-")
          ? { label: "Model", message: modelProblem(p).message, target: slotId(slot) }
          : {
              label: FIELD_LABELS[slot] ?? slot,
              message: plainMessage(p.message),
              target: slot === "general" ? "provider-general" : slotId(slot)
            }
      )
    )
  )

/** The result of "Test connection": what happened, and the models the provider lists (new ones marked). */
export const probeResult = (result: ProbeResult, configured: ReadonlyArray<string>): Html => html`
  <div id="probe-result" class="probe-result" hx-disable>
    ${alert(result.ok ? "ok" : "error", result.summary, result.ok ? undefined : "Test failed.")}
    ${result.endpoint === "" ? html`` : html`<p class="muted">Asked <code>GET ${result.endpoint}</code>.</p>`}
    ${
      result.models.length === 0
        ? html``
        : html`<table class="catalog discovered"><caption>Models the provider lists</caption>
          <thead><tr><th scope="col">Model id</th><th scope="col">Here</th></tr></thead>
          <tbody>${result.models.map(
            (m) =>
              html`<tr><td data-label="Model id"><code>${m}</code></td><td data-label="Here">${configured.includes(m) ? badge("ok", "configured") : badge("muted", "not added")}</td></tr>`
          )}</tbody></table>`
    }
  </div>`

const probeCard = (ctx: PageContext, id: string, result: ProbeResult | null, configured: ReadonlyArray<string>): Html =>
  canManageProviders(ctx.viewer)
    ? html`<section class="card">
    <h2>Test connection</h2>
    <p class="muted">Asks the provider for its models with the stored key: shows whether the key works and which models it offers.</p>
    <form method="post" action="${providerHref(id, "/test")}" hx-post="${providerHref(id, "/test")}" hx-target="#probe-result" hx-swap="outerHTML" hx-disabled-elt="find button">
      ${csrfField(ctx)}
      <button type="submit" class="secondary">Test connection and list models</button>
    </form>
    ${result === null ? html`<div id="probe-result"></div>` : probeResult(result, configured)}
  </section>`
    : html``

/** One model row; `key` names its fields (`m.<key>.…`) and its problem slot. */
const modelRow = (row: ModelRow, problems: ReadonlyArray<Problem> | undefined, disabled: boolean): Html => {
  const id = (f: string) => `m-${row.key}-${f}`
  const input = (f: keyof ModelRow & string, label: string, value: string, mode = "numeric") => html`
    <div class="field"><label for="${id(f)}">${label}</label>
      <input id="${id(f)}" name="m.${row.key}.${f}" value="${value}" inputmode="${mode}" autocomplete="off"${disabled ? html` disabled` : html``}></div>`
  return html`
  <div class="repeat-row" data-row>
    <input type="hidden" name="modelKey" value="${row.key}">
    <div class="grid-2">
      ${input("id", "Model id", row.id, "text")}
      ${input("contextWindow", "Context window (tokens)", row.contextWindow)}
      ${input("maxTokens", "Max output tokens", row.maxTokens)}
    </div>
    <fieldset><legend>Thinking levels it accepts</legend>
      <div class="check-grid">${THINKING_LEVELS.map(
        (l) =>
          html`<label class="check"><input type="checkbox" name="m.${row.key}.thinking" value="${l}"${checked(row.thinking.includes(l))}${disabled ? html` disabled` : html``}> ${l}</label>`
      )}</div>
    </fieldset>
    <div class="grid-2">
      ${input("input", "Input price (USD per million tokens)", row.input, "decimal")}
      ${input("output", "Output price (USD per million)", row.output, "decimal")}
      ${input("cacheRead", "Cache read price", row.cacheRead, "decimal")}
      ${input("cacheWrite", "Cache write price", row.cacheWrite, "decimal")}
    </div>
    ${fieldProblems(`row-${row.key}`, problems?.map(modelProblem))}
    ${disabled ? html`` : html`<button type="button" class="small secondary" data-remove-row>Remove model</button>`}
  </div>`
}

const keyField = (creating: boolean, problems: Placed, disabled: boolean): Html => html`
  <div class="field" data-slot="apiKey">
    ${
      problems.size > 0 && !disabled
        ? alert(
            "warn",
            creating
              ? "Type the API key again before saving: a key is never sent back to the browser, so the form could not keep it."
              : "If you typed a new API key, type it again: a key is never sent back to the browser. Left blank, the stored key stays.",
            "The key field is empty."
          )
        : html``
    }
    <label for="f-apiKey">API key</label>
    <p class="hint" id="hint-apiKey">${creating ? "Stored encrypted; it is never shown again." : "A key is stored. Leave blank to keep it; type a new one to replace it."}</p>
    <input id="f-apiKey" name="apiKey" type="password" autocomplete="new-password" value="" aria-describedby="hint-apiKey problems-apiKey"${disabled ? html` disabled` : html``}>
    ${fieldProblems("apiKey", problems.get("apiKey"))}
  </div>`

/** The bindings that hold a provider, named when its delete is refused. */
export type HeldBy = ReadonlyArray<Pick<Binding, "agentName" | "projectId" | "modelId">>

/**
 * The Delete menu. htmx posts it; a refusal (the provider is bound) swaps the menu back in, open,
 * naming each binding that holds it with a link to change it; a plain post gets the page with the menu so.
 */
export const deleteMenu = (ctx: PageContext, id: string, heldBy: HeldBy | null = null): Html => {
  const action = providerHref(id, "/delete")
  return html`
  <details class="action-menu" id="provider-delete"${heldBy === null ? html`` : html` open`}>
    <summary class="button danger">Delete</summary>
    <div class="popover stack">
      ${
        heldBy === null
          ? html``
          : html`<div class="alert alert-error" role="alert" hx-disable>
          <strong>Not deleted: ${id} is still bound.</strong>
          <p>Bind ${heldBy.length === 1 ? "this agent" : "these agents"} to another model, or remove the binding, first:</p>
          <ul class="held-by">${heldBy.map(
            (b) =>
              html`<li><a href="${agentHref(b.agentName, "/binding")}">${b.agentName}</a>: ${b.projectId === "" ? "installation default" : html`project <code>${b.projectId}</code>`}, model <code>${b.modelId}</code></li>`
          )}</ul>
        </div>`
      }
      <form class="stack" method="post" action="${action}" hx-post="${action}" hx-target="#provider-delete" hx-swap="outerHTML" hx-disabled-elt="find button">
        ${csrfField(ctx)}
        <p>Delete the provider <strong>${id}</strong> and its stored key? Refused while an agent is bound to it.</p>
        <button type="submit" class="danger">Delete ${id}</button>
      </form>
    </div>
  </details>`
}

const general = (problems: Placed): Html => {
  const g = problems.get("general") ?? []
  return html`${providerSummary(problems)}<div id="provider-general">${g.length === 0 ? html`` : alert("error", problemList(g))}</div>`
}

/** The custom-provider form: new (`creating`) or an existing one; read-only without providers.manage. */
export const customProviderPage = (
  ctx: PageContext,
  form: CustomForm,
  problems: Placed,
  creating: boolean,
  notice: string | null = null,
  probe: ProbeResult | null = null,
  heldBy: HeldBy | null = null
): Html => {
  const manage = canManageProviders(ctx.viewer)
  const disabled = !manage
  const dis = disabled ? html` disabled` : html``
  const action = creating ? "/providers" : providerHref(form.id)
  return layout(
    ctx,
    creating ? "New LLM provider" : form.id,
    html`
  ${pageHeader(creating ? "New custom provider" : form.id, {
    crumbs: [["/providers", "LLM providers"]],
    actions: !creating && manage ? deleteMenu(ctx, form.id, heldBy) : html``
  })}
  ${notice === null ? html`` : alert("ok", notice)}
  ${readOnlyNote(ctx)}
  ${
    creating
      ? html``
      : probeCard(
          ctx,
          form.id,
          probe,
          form.models.map((m) => m.id)
        )
  }
  <form method="post" action="${action}" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${general(problems)}
    <input type="hidden" name="kind" value="custom">
    ${
      creating
        ? html`<div class="field"><label for="f-id">Provider id</label>
            <p class="hint" id="hint-id">Lower-case letters, digits and dashes; bindings and job records name it.</p>
            <input id="f-id" name="id" value="${form.id}" required${NAME_RULES} autocomplete="off" spellcheck="false" aria-describedby="hint-id problems-id">
            ${fieldProblems("id", problems.get("id"))}</div>`
        : html``
    }
    <div class="field"><label for="f-api">API</label>
      <select id="f-api" name="api" aria-describedby="problems-api"${dis}>${API_LABELS.map(
        ([v, label]) => html`<option value="${v}"${form.api === v ? html` selected` : html``}>${label}</option>`
      )}</select>
      ${fieldProblems("api", problems.get("api"))}</div>
    <div class="field"><label for="f-baseUrl">Base URL</label>
      <input id="f-baseUrl" name="baseUrl" type="url" value="${form.baseUrl}" placeholder="https://llm.example.com/v1" autocomplete="off" spellcheck="false" aria-describedby="problems-baseUrl"${dis}>
      ${fieldProblems("baseUrl", problems.get("baseUrl"))}</div>
    ${keyField(creating, problems, disabled)}
    <fieldset>
      <legend>Models</legend>
      ${fieldProblems("models", problems.get("models"))}
      <div id="rows-model" class="rows" data-empty="No model: add at least one.">
        ${form.models.map((m) => modelRow(m, problems.get(`row-${m.key}`), disabled))}
      </div>
      ${
        manage
          ? html`<template id="tpl-model">${modelRow({ key: "__KEY__", id: "", contextWindow: "128000", maxTokens: "8192", thinking: ["off"], input: "", output: "", cacheRead: "", cacheWrite: "" }, undefined, false)}</template>
      <button type="button" class="secondary" data-add-row="model">Add model</button>`
          : html``
      }
    </fieldset>
    ${manage ? html`<div class="save-bar"><button type="submit" class="primary">${creating ? "Add provider" : "Save provider"}</button></div>` : html``}
  </form>`
  )
}

/** A built-in provider: choose from pi-ai's catalog, give the key. */
export const builtinProviderPage = (
  ctx: PageContext,
  catalog: ReadonlyArray<CatalogEntry>,
  values: { readonly id: string; readonly builtin: string },
  problems: Placed,
  existing: ProviderView | null,
  probe: ProbeResult | null = null,
  heldBy: HeldBy | null = null
): Html => {
  const manage = canManageProviders(ctx.viewer)
  const creating = existing === null
  const dis = manage ? html`` : html` disabled`
  return layout(
    ctx,
    creating ? "New built-in provider" : values.id,
    html`
  ${pageHeader(creating ? "Add a built-in provider" : values.id, {
    crumbs: [["/providers", "LLM providers"]],
    actions: !creating && manage ? deleteMenu(ctx, values.id, heldBy) : html``
  })}
  ${readOnlyNote(ctx)}
  ${
    existing === null
      ? html``
      : probeCard(
          ctx,
          existing.id,
          probe,
          existing.models.map((m) => m.id)
        )
  }
  <form method="post" action="${creating ? "/providers" : providerHref(values.id)}" class="stack card" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${general(problems)}
    <input type="hidden" name="kind" value="builtin">
    ${
      creating
        ? html`<div class="field"><label for="f-id">Provider id</label>
            <input id="f-id" name="id" value="${values.id}" required${NAME_RULES} autocomplete="off" spellcheck="false" aria-describedby="problems-id">
            ${fieldProblems("id", problems.get("id"))}</div>`
        : html``
    }
    <div class="field"><label for="f-builtin">Built-in provider</label>
      <select id="f-builtin" name="builtin" aria-describedby="problems-builtin"${dis}>${catalog.map(
        (c) =>
          html`<option value="${c.id}"${values.builtin === c.id ? html` selected` : html``}>${c.name} (${c.models.length} models)</option>`
      )}</select>
      ${fieldProblems("builtin", problems.get("builtin"))}</div>
    ${keyField(creating, problems, !manage)}
    ${
      existing === null
        ? html``
        : html`<details><summary>${existing.models.length} models</summary><ul class="inline-list" hx-disable>${existing.models.map(
            (m) =>
              html`<li><code>${m.id}</code> <span class="muted">${m.thinkingLevels.join("/")} · in ${usd(m.cost?.input ?? null)}/M</span></li>`
          )}</ul></details>`
    }
    ${manage ? html`<div class="save-bar"><button type="submit" class="primary">${creating ? "Add provider" : "Save provider"}</button></div>` : html``}
  </form>`
  )
}
