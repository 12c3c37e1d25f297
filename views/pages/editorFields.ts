/**
 * The agent editor's fields: labelled controls with a problem slot each, the tools and shared-skills
 * fieldsets, and repeated rows (local skills, package files) with the templates that add more.
 */
import { THINKING_LEVELS } from "../../src/contract/AgentDefinition.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import type { AgentForm, FormRow, PlacedProblems } from "../forms/agentForm.ts"
import { fieldProblems, NAME_RULES, skillHref, slotId, unconfinedWarning } from "../components.ts"
import { html, type Html } from "../html.ts"

export interface SharedSkillOption {
  readonly name: string
  readonly description: string
  readonly builtin: boolean
}

/** What the editor offers, from the services that own it. */
export interface EditorOptions {
  readonly kernelTools: ReadonlyArray<string>
  readonly sharedSkills: ReadonlyArray<SharedSkillOption>
  /** Registered MCP servers and the grants each offers (`mcp__<server>__*`, then allowed tools). */
  readonly mcpServers: ReadonlyArray<{ readonly name: string; readonly grants: ReadonlyArray<string> }>
  /** The model of the agent's installation-default binding and its thinking levels; null = not bound. */
  readonly boundModel: { readonly label: string; readonly thinkingLevels: ReadonlyArray<string> } | null
}

const describedBy = (slot: string, hint: boolean): string => `${slotId(slot)}${hint ? ` hint-${slot}` : ""}`

/** A labelled field: label, optional hint, the control, then its problem slot. */
export const field = (
  slot: string,
  label: string,
  control: (describedBy: string) => Html,
  placed: PlacedProblems,
  hint?: Html | string
): Html => html`
  <div class="field" data-slot="${slot}">
    <label for="f-${slot}">${label}</label>
    ${hint === undefined ? html`` : html`<p class="hint" id="hint-${slot}">${hint}</p>`}
    ${control(describedBy(slot, hint !== undefined))}
    ${fieldProblems(slot, placed.bySlot.get(slot))}
  </div>`

/** A textarea whose content is user text: escaped, and inside hx-disable. */
export const textArea = (id: string, name: string, value: string, rows: number, describedBy: string, extra: Html = html``): Html => html`
  <div hx-disable><textarea id="${id}" name="${name}" rows="${rows}" spellcheck="false" aria-describedby="${describedBy}"${extra}>${value}</textarea></div>`

const TOOL_NOTES: Readonly<Record<string, string>> = {
  read: "read files (confined to the sources)",
  ls: "list folders (confined)",
  grep: "search file contents (confined)",
  find: "find files by name (confined)",
  write: "write files (confined to the output folder)",
  edit: "edit files (confined to the output folder)",
  shell: "run commands",
  git: "run git",
  codemode: "run JavaScript in a sandbox that calls the other tools"
}

const toolCheck = (form: AgentForm, value: string, note: string, danger = false): Html => html`
  <label class="check${danger ? " danger-option" : ""}"><input type="checkbox" name="tools" value="${value}"${form.tools.includes(value) ? html` checked` : html``}>
    <code>${value}</code> <span class="muted">${note}</span></label>`

const mcpGroup = (form: AgentForm, servers: EditorOptions["mcpServers"]): Html =>
  servers.length === 0
    ? html`<p class="hint">No MCP server is registered; grants of servers registered later can go under Other tools.</p>`
    : html`<div class="check-grid" role="group" aria-label="MCP servers" aria-describedby="${slotId("tools")}">${servers.map((s) =>
        s.grants.map((g) => toolCheck(form, g, g.endsWith("__*") ? `every tool of ${s.name}` : `one tool of ${s.name}`))
      )}</div>`

export const toolsFieldset = (
  form: AgentForm,
  options: EditorOptions,
  placed: PlacedProblems,
  granted: ReadonlyArray<string> | undefined,
  unconfined: boolean
): Html => html`
  <fieldset class="tools">
    <legend>Tools</legend>
    <div class="choice-row">
      <label class="check"><input type="radio" name="toolsMode" value="all"${form.toolsMode === "all" ? html` checked` : html``}> Every kernel tool (no <code>tools</code> key; MCP tools still need a grant)</label>
      <label class="check"><input type="radio" name="toolsMode" value="selected"${form.toolsMode === "selected" ? html` checked` : html``}> Only the tools checked below</label>
    </div>
    <div class="check-grid" role="group" aria-label="Kernel tools" aria-describedby="${slotId("tools")}">
      ${options.kernelTools.map((t) =>
        t === "shell" || t === "git"
          ? toolCheck(form, t, `${TOOL_NOTES[t] ?? ""}: ${unconfined ? "unconfined" : "sandboxed"}`, true)
          : toolCheck(form, t, TOOL_NOTES[t] ?? "")
      )}
    </div>
    <p class="group-label">MCP servers</p>
    ${mcpGroup(form, options.mcpServers)}
    ${fieldProblems("tools", placed.bySlot.get("tools"))}
    <div id="unconfined-warning">${unconfinedWarning(granted, unconfined)}</div>
    ${field(
      "otherTools",
      "Other tools",
      (d) => textArea("f-otherTools", "otherTools", form.otherTools, 2, d),
      placed,
      html`One per line: MCP grants <code>mcp__server__tool</code> or <code>mcp__server__*</code> (member agents may list their own tools).`
    )}
  </fieldset>`

/** Thinking levels: those the bound model supports when the agent is bound, else every level. */
export const thinkingSelect = (form: AgentForm, bound: EditorOptions["boundModel"], placed: PlacedProblems): Html => {
  const levels = bound?.thinkingLevels ?? THINKING_LEVELS
  const unsupported = form.thinking !== "" && !levels.includes(form.thinking)
  const hint =
    bound === null
      ? "No model is bound to this agent yet: every level is offered; a job's model clamps it to the nearest it has."
      : `Offered: what ${bound.label} (this agent's model binding) supports.`
  return field(
    "thinking",
    "Thinking level",
    (d) => html`<select id="f-thinking" name="thinking" aria-describedby="${d}">
      <option value="">not set (the model's default)</option>
      ${levels.map((t) => html`<option value="${t}"${form.thinking === t ? html` selected` : html``}>${t}</option>`)}
      ${unsupported ? html`<option value="${form.thinking}" selected>${form.thinking} (the bound model lacks it)</option>` : html``}
    </select>`,
    placed,
    hint
  )
}

export const skillsFieldset = (form: AgentForm, shared: ReadonlyArray<SharedSkillOption>, placed: PlacedProblems): Html => {
  const byName = new Map(shared.map((s) => [s.name, s]))
  // Listed skills first, in prompt order (an unknown one stays, checked, so its problem can be fixed); then the rest.
  const options = [
    ...form.skills.map((name) => byName.get(name) ?? { name, description: "(no such shared skill)", builtin: false }),
    ...shared.filter((s) => !form.skills.includes(s.name))
  ]
  return html`
  <fieldset>
    <legend>Shared skills</legend>
    <p class="hint" id="hint-skills">Appended to the instructions in this order. Manage them under <a href="/agent-skills">Shared skills</a>.</p>
    ${
      options.length === 0
        ? html`<p class="muted">No shared skills exist yet.</p>`
        : html`<div class="check-list" role="group" aria-label="Shared skills" aria-describedby="${slotId("skills")} hint-skills">${options.map(
            (
              s
            ) => html`<label class="check"><input type="checkbox" name="skills" value="${s.name}"${form.skills.includes(s.name) ? html` checked` : html``}>
              <a href="${skillHref(s.name)}"><code>${s.name}</code></a>${s.builtin ? html` <span class="badge badge-muted">built-in</span>` : html``}
              <span class="muted" hx-disable>${s.description}</span></label>`
          )}</div>`
    }
    ${fieldProblems("skills", placed.bySlot.get("skills"))}
  </fieldset>`
}

export type RowKind = "ls" | "file"

const ROW_TEXT: Readonly<
  Record<RowKind, { readonly name: string; readonly content: string; readonly remove: string; readonly hint: string }>
> = {
  ls: {
    name: "Skill name",
    content: "SKILL.md",
    remove: "Remove skill",
    hint: "Saved as skills/<name>/SKILL.md; the whole file is the skill."
  },
  file: { name: "Path", content: "Content", remove: "Remove file", hint: "commands/<name>.md, workflows/<name>.md or scripts/<file>." }
}

/** One repeated row; `key` ties its problem slot to the row across previews. */
const repeatRow = (kind: RowKind, row: FormRow, problems: ReadonlyArray<Problem> | undefined): Html => {
  const t = ROW_TEXT[kind]
  const slot = `${kind}-${row.key}`
  return html`
  <div class="repeat-row" data-row>
    <input type="hidden" name="${kind}Key" value="${row.key}">
    <div class="field">
      <label for="${kind}-name-${row.key}">${t.name}</label>
      <input id="${kind}-name-${row.key}" name="${kind}Name" value="${row.name}"${kind === "ls" ? NAME_RULES : html``} autocomplete="off" spellcheck="false" aria-describedby="${slotId(slot)}">
    </div>
    <div class="field">
      <label for="${kind}-content-${row.key}">${t.content}</label>
      ${textArea(`${kind}-content-${row.key}`, `${kind}Content`, row.content, 5, slotId(slot))}
    </div>
    ${fieldProblems(slot, problems)}
    <button type="button" class="small secondary" data-remove-row>${t.remove}</button>
  </div>`
}

/** The rows of one kind, their add button and the template the button clones (`__KEY__` is replaced). */
export const repeatSection = (
  kind: RowKind,
  legend: string,
  rows: ReadonlyArray<FormRow>,
  placed: PlacedProblems,
  empty: string
): Html => html`
  <fieldset>
    <legend>${legend}</legend>
    <p class="hint">${ROW_TEXT[kind].hint}</p>
    <div id="rows-${kind}" class="rows" data-empty="${empty}">
      ${rows.map((r) => repeatRow(kind, r, placed.bySlot.get(`${kind}-${r.key}`)))}
    </div>
    <template id="tpl-${kind}">${repeatRow(kind, { key: "__KEY__", name: "", content: "" }, undefined)}</template>
    <button type="button" class="secondary" data-add-row="${kind}">${kind === "ls" ? "Add local skill" : "Add file"}</button>
  </fieldset>`
