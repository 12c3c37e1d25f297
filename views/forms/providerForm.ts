/**
 * The LLM provider and MCP server forms: posted fields → the input the stores decode (the stores
 * own every rule), and the stores' problems → the field or row they belong to. Secrets (API keys,
 * header values) are read from the form and passed on, never kept in the values a view re-renders.
 */
import { THINKING_LEVELS, type ThinkingLevel } from "../../src/contract/AgentDefinition.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { ProviderView } from "../../src/providers/ProviderStore.ts"
import type { McpServerView } from "../../src/providers/McpServers.ts"

interface Fields {
  readonly get: (name: string) => unknown
  readonly getAll: (name: string) => ReadonlyArray<unknown>
}

const text = (f: Fields, name: string): string => {
  const v = f.get(name)
  return typeof v === "string" ? v.trim() : ""
}
const keysOf = (f: Fields, name: string): Array<string> =>
  f.getAll(name).flatMap((k) => (typeof k === "string" && /^[A-Za-z0-9_-]{1,40}$/.test(k) ? [k] : []))
/** A number field: blank is NaN, so the store reports it rather than a silent 0. */
const num = (s: string): number => (s === "" ? Number.NaN : Number(s))

export interface ModelRow {
  readonly key: string
  readonly id: string
  readonly contextWindow: string
  readonly maxTokens: string
  readonly thinking: ReadonlyArray<ThinkingLevel>
  readonly input: string
  readonly output: string
  readonly cacheRead: string
  readonly cacheWrite: string
}

/** What a custom-provider form shows again (never the key). */
export interface CustomForm {
  readonly id: string
  readonly api: string
  readonly baseUrl: string
  readonly models: ReadonlyArray<ModelRow>
}

const blankModelRow = (key: string): ModelRow => ({
  key,
  id: "",
  contextWindow: "128000",
  maxTokens: "8192",
  thinking: ["off"],
  input: "",
  output: "",
  cacheRead: "",
  cacheWrite: ""
})
export const blankCustomForm = (): CustomForm => ({ id: "", api: "openai-completions", baseUrl: "", models: [blankModelRow("m0")] })

export const customFormOf = (p: ProviderView): CustomForm => ({
  id: p.id,
  api: p.api ?? "openai-completions",
  baseUrl: p.baseUrl ?? "",
  models: p.models.map((m, i) => ({
    key: `m${i}`,
    id: m.id,
    contextWindow: String(m.contextWindow),
    maxTokens: String(m.maxTokens),
    thinking: m.thinkingLevels,
    input: m.cost === null ? "" : String(m.cost.input),
    output: m.cost === null ? "" : String(m.cost.output),
    cacheRead: m.cost === null ? "" : String(m.cost.cacheRead),
    cacheWrite: m.cost === null ? "" : String(m.cost.cacheWrite)
  }))
})

const isLevel = (v: unknown): v is ThinkingLevel => typeof v === "string" && (THINKING_LEVELS as ReadonlyArray<string>).includes(v)

export const customFormFrom = (f: Fields, id?: string): CustomForm => ({
  id: id ?? text(f, "id"),
  api: text(f, "api"),
  baseUrl: text(f, "baseUrl"),
  models: keysOf(f, "modelKey").map((key) => ({
    key,
    id: text(f, `m.${key}.id`),
    contextWindow: text(f, `m.${key}.contextWindow`),
    maxTokens: text(f, `m.${key}.maxTokens`),
    thinking: f.getAll(`m.${key}.thinking`).filter(isLevel),
    input: text(f, `m.${key}.input`),
    output: text(f, `m.${key}.output`),
    cacheRead: text(f, `m.${key}.cacheRead`),
    cacheWrite: text(f, `m.${key}.cacheWrite`)
  }))
})

/** The key field: blank = none given (keep the stored one on edit). Not part of any re-rendered value. */
const apiKeyOf = (f: Fields): { readonly apiKey?: string } => {
  const key = text(f, "apiKey")
  return key === "" ? {} : { apiKey: key }
}

export const customInput = (form: CustomForm, f: Fields): Record<string, unknown> => ({
  kind: "custom",
  id: form.id,
  api: form.api,
  baseUrl: form.baseUrl,
  ...apiKeyOf(f),
  models: form.models.map((m) => {
    const prices = [m.input, m.output, m.cacheRead, m.cacheWrite]
    const levels = m.thinking.length === 0 ? ["off" as const] : m.thinking
    return {
      id: m.id,
      contextWindow: num(m.contextWindow),
      maxTokens: num(m.maxTokens),
      reasoning: levels.some((l) => l !== "off"),
      thinkingLevels: levels,
      ...(prices.every((p) => p === "")
        ? {}
        : {
            cost: {
              input: num(m.input || "0"),
              output: num(m.output || "0"),
              cacheRead: num(m.cacheRead || "0"),
              cacheWrite: num(m.cacheWrite || "0")
            }
          })
    }
  })
})

export const builtinInput = (f: Fields, id?: string): Record<string, unknown> => ({
  kind: "builtin",
  id: id ?? text(f, "id"),
  builtin: text(f, "builtin"),
  ...apiKeyOf(f)
})

/** Problems by slot: a top-level field name, `row-<key>` for a model row, or `general`. */
export const placeByRow = (
  problems: ReadonlyArray<Problem>,
  rowKeys: ReadonlyArray<string>,
  fields: ReadonlyArray<string>,
  rowsField = "models"
): Map<string, Array<Problem>> => {
  const bySlot = new Map<string, Array<Problem>>()
  const add = (slot: string, p: Problem) => bySlot.set(slot, [...(bySlot.get(slot) ?? []), p])
  for (const p of problems) {
    const row = new RegExp(`^${rowsField}(?:\\.|\\[)(\\d+)`).exec(p.path)
    const key = row?.[1] === undefined ? undefined : rowKeys[Number(row[1])]
    const top = p.path.split(/[.[]/)[0] ?? ""
    if (key !== undefined) add(`row-${key}`, p)
    else if (fields.includes(top)) add(top, p)
    else add("general", p)
  }
  return bySlot
}

export interface HeaderRow {
  readonly key: string
  readonly name: string
}

/** What an MCP server form shows again (header names only, never their values). */
export interface McpForm {
  readonly name: string
  readonly url: string
  readonly headers: ReadonlyArray<HeaderRow>
  readonly timeoutSec: string
  readonly allowedTools: string
  readonly allowPrivateNetwork: boolean
}

export const blankMcpForm = (): McpForm => ({
  name: "",
  url: "",
  headers: [],
  timeoutSec: "30",
  allowedTools: "",
  allowPrivateNetwork: false
})

export const mcpFormOf = (s: McpServerView): McpForm => ({
  name: s.name,
  url: s.url,
  headers: s.headerNames.map((name, i) => ({ key: `h${i}`, name })),
  timeoutSec: String(s.timeoutSec),
  allowedTools: s.allowedTools.join("\n"),
  allowPrivateNetwork: s.allowPrivateNetwork
})

export const mcpFormFrom = (f: Fields, name?: string): McpForm => ({
  name: name ?? text(f, "name"),
  url: text(f, "url"),
  headers: keysOf(f, "headerKey")
    .map((key) => ({ key, name: text(f, `h.${key}.name`) }))
    .filter((h) => h.name !== ""),
  timeoutSec: text(f, "timeoutSec"),
  allowedTools: text(f, "allowedTools"),
  allowPrivateNetwork: f.get("allowPrivateNetwork") === "on"
})

/**
 * The store's input. Headers: a value typed in any row replaces the stored set with the rows that have a
 * value; no value typed keeps the stored headers (write-only: they are never shown to edit);
 * "remove stored headers" clears them.
 */
export const mcpInput = (form: McpForm, f: Fields): Record<string, unknown> => {
  const typed = keysOf(f, "headerKey").flatMap((key) => {
    const name = text(f, `h.${key}.name`)
    const value = text(f, `h.${key}.value`)
    return name !== "" && value !== "" ? [[name, value] as const] : []
  })
  const headers = typed.length > 0 ? { headers: Object.fromEntries(typed) } : f.get("clearHeaders") === "on" ? { headers: {} } : {}
  return {
    url: form.url,
    ...headers,
    timeoutSec: num(form.timeoutSec),
    allowedTools: form.allowedTools.split(/[\s,]+/).filter((t) => t !== ""),
    allowPrivateNetwork: form.allowPrivateNetwork
  }
}
