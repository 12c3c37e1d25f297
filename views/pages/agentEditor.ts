/**
 * The agent editor (create and edit): manifest, tools, skills, behaviour, instructions and package
 * files in one form. Typing posts the draft to the preview route (debounced); its response updates
 * every problem slot out of band. Saving is a plain form post: a new version, or the problems.
 */
import type { AgentView } from "../../src/agents/AgentStore.ts"
import { FIELD_SLOTS, toolsOf, type AgentForm, type PlacedProblems } from "../forms/agentForm.ts"
import { alert, errorSummary, fieldProblems, NAME_RULES, pageHeader, problemList, slotId, unconfinedWarning } from "../components.ts"
import { plainMessage, type SummaryItem } from "../forms/plainProblems.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"
import { agentHeader, type CopyRefusal } from "./agentHeader.ts"
import { field, repeatSection, skillsFieldset, textArea, thinkingSelect, toolsFieldset, type EditorOptions } from "./editorFields.ts"

export interface EditorProps {
  readonly form: AgentForm
  readonly options: EditorOptions
  readonly placed: PlacedProblems
  /** The saved agent when editing; null when creating. */
  readonly agent: AgentView | null
  readonly notice: string | null
  /** Problems were computed for this form (a failed save, or a saved agent's validity). */
  readonly checked: boolean
  /** A refused copy to show in the header's Copy menu. */
  readonly copy?: CopyRefusal | null
}

const count = (placed: PlacedProblems): number =>
  placed.general.length + [...placed.bySlot.values()].reduce((n, list) => n + list.length, 0)

/** The status line next to the save button: how many problems the draft has. */
const previewStatus = (placed: PlacedProblems, checked: boolean): Html => {
  const n = count(placed)
  if (!checked) return html`<span class="muted">Problems show here and next to their fields while you type.</span>`
  return n === 0
    ? html`<span class="status-ok">No problems: this draft can be saved.</span>`
    : html`<span class="status-error">${n} problem${n === 1 ? "" : "s"}: see the fields marked below.</span>`
}

const generalProblems = (placed: PlacedProblems, oob: boolean): Html => html`
  <div id="problems-general" class="general-problems"${oob ? html` hx-swap-oob="true"` : html``}>${
    placed.general.length === 0 ? html`` : alert("error", problemList(placed.general), "Problems with the package:")
  }</div>`

/**
 * The preview (or failed save) response for htmx: the status line for the target, and every problem
 * slot of the form out of band, empty ones included, so fixed problems disappear.
 */
export const previewFragment = (form: AgentForm, placed: PlacedProblems, unconfined: boolean): Html => html`
  ${previewStatus(placed, true)}
  ${generalProblems(placed, true)}
  ${FIELD_SLOTS.map((slot) => fieldProblems(slot, placed.bySlot.get(slot), true))}
  ${form.localSkills.map((r) => fieldProblems(`ls-${r.key}`, placed.bySlot.get(`ls-${r.key}`), true))}
  ${form.files.map((r) => fieldProblems(`file-${r.key}`, placed.bySlot.get(`file-${r.key}`), true))}
  <div id="unconfined-warning" hx-swap-oob="true">${unconfinedWarning(toolsOf(form), unconfined)}</div>`

const manifest = (form: AgentForm, placed: PlacedProblems, creating: boolean, boundModel: EditorOptions["boundModel"]): Html => html`
  <fieldset>
    <legend>Manifest</legend>
    <div class="grid-2">
      ${
        creating
          ? field(
              "name",
              "Name",
              (d) =>
                html`<input id="f-name" name="name" value="${form.name}" required${NAME_RULES} autocomplete="off" spellcheck="false" aria-describedby="${d}">`,
              placed,
              "Lower-case letters, digits and dashes, starting with a letter. It cannot change later."
            )
          : html`<input type="hidden" name="name" value="${form.name}">${fieldProblems("name", placed.bySlot.get("name"))}`
      }
      <input type="hidden" name="version" value="${form.version}">${fieldProblems("version", placed.bySlot.get("version"))}
      ${field(
        "audience",
        "Audience",
        (d) =>
          html`<select id="f-audience" name="audience" aria-describedby="${d}">${["runtime", "member"].map(
            (a) =>
              html`<option value="${a}"${form.audience === a ? html` selected` : html``}>${a === "runtime" ? "runtime (runs as a job)" : "member"}</option>`
          )}</select>`,
        placed
      )}
      ${thinkingSelect(form, boundModel, placed)}
    </div>
    ${field("description", "Description", (d) => textArea("f-description", "description", form.description, 2, d, html` required`), placed)}
  </fieldset>`

const behaviour = (form: AgentForm, placed: PlacedProblems): Html => html`
  <fieldset>
    <legend>Deny-command patterns</legend>
    ${field(
      "deny",
      "Patterns",
      (d) => textArea("f-deny", "denyPatterns", form.denyPatterns, 3, d),
      placed,
      html`One RE2 regular expression per line, checked against every <code>shell</code> and <code>git</code> command. A tripwire, not a boundary: a determined model can spell around them.`
    )}
  </fieldset>
  <fieldset>
    <legend>Output contract</legend>
    ${field(
      "outputs",
      "Output files",
      (d) => textArea("f-outputs", "outputs", form.outputs, 3, d, html` class="mono"`),
      placed,
      html`One file per line that every job must write, relative to the output folder. For a JSON file that must match a JSON Schema of this package, add the schema's path after a space: <code>findings.json schemas/findings.schema.json</code> (the schema is a package file below).`
    )}
    ${field(
      "answer",
      "Answer schema",
      (d) =>
        html`<input type="text" id="f-answer" name="answer" value="${form.answer}" class="mono" spellcheck="false" aria-describedby="${d}">`,
      placed,
      html`Optional: a JSON Schema of this package (<code>schemas/answer.schema.json</code>) that the job's final message must satisfy as JSON; the job's result then carries the parsed answer.`
    )}
    <div class="field" data-slot="grounding">
      <label class="check"><input type="checkbox" id="f-grounding" name="grounding" value="required"${form.grounding === "required" ? html` checked` : html``} aria-describedby="${slotId("grounding")}">
        Grounding required: a job whose outputs cite lines it never read fails</label>
      ${fieldProblems("grounding", placed.bySlot.get("grounding"))}
    </div>
    <div class="field" data-slot="gate">
      <label class="check"><input type="checkbox" id="f-gate" name="gate" value="evals"${form.gate === "evals" ? html` checked` : html``} aria-describedby="${slotId("gate")}">
        Gate on evals: a new version goes live only when its evals pass (it is saved either way)</label>
      ${fieldProblems("gate", placed.bySlot.get("gate"))}
    </div>
  </fieldset>`

const SLOT_LABELS: Readonly<Record<string, string>> = {
  name: "Name",
  version: "Version label",
  description: "Description",
  audience: "Audience",
  tools: "Tools",
  otherTools: "Other tools",
  skills: "Shared skills",
  thinking: "Thinking",
  deny: "Deny-command patterns",
  grounding: "Grounding required",
  gate: "Gate on evals",
  outputs: "Output files",
  answer: "Answer schema",
  instructions: "Instructions"
}

/** Every placed problem as a summary line linking to its slot. */
const editorSummary = (form: AgentForm, placed: PlacedProblems): ReadonlyArray<SummaryItem> => {
  const rowLabel = (slot: string): string => {
    const ls = form.localSkills.find((r) => `ls-${r.key}` === slot)
    if (ls !== undefined) return `Local skill ${ls.name === "" ? "(no name)" : ls.name}`
    const file = form.files.find((r) => `file-${r.key}` === slot)
    return file !== undefined ? `Package file ${file.name === "" ? "(no path)" : file.name}` : slot
  }
  return [
    ...placed.general.map((p) => ({ label: "Package", message: plainMessage(p.message), target: "problems-general" })),
    ...[...placed.bySlot.entries()].flatMap(([slot, problems]) =>
      problems.map((p) => ({ label: SLOT_LABELS[slot] ?? rowLabel(slot), message: plainMessage(p.message), target: slotId(slot) }))
    )
  ]
}

/** The form itself; `action` saves (creates when `agent` is null). */
const editorForm = (ctx: PageContext, props: EditorProps): Html => {
  const { form, placed } = props
  const creating = props.agent === null
  const action = creating ? "/agents" : `/agents/${encodeURIComponent(form.name)}`
  return html`
  <form id="agent-form" class="editor" method="post" action="${action}" novalidate data-unsaved-guard${props.checked ? html`` : html` data-live-only`}
        hx-post="/agents/-/preview" hx-trigger="input delay:500ms, rows-changed delay:100ms" hx-target="#preview-status" hx-sync="this:replace">
    ${csrfField(ctx)}
    <input type="hidden" name="_mode" value="${creating ? "create" : "edit"}">
    ${props.checked ? errorSummary(editorSummary(form, placed)) : html``}
    ${generalProblems(placed, false)}
    ${manifest(form, placed, creating, props.options.boundModel)}
    ${toolsFieldset(form, props.options, placed, toolsOf(form), ctx.processToolsUnconfined)}
    ${skillsFieldset(form, props.options.sharedSkills, placed)}
    ${repeatSection("ls", "Local skills", form.localSkills, placed, "No local skills.")}
    ${behaviour(form, placed)}
    <fieldset>
      <legend>Instructions</legend>
      ${field("instructions", "Instructions (the system prompt)", (d) => textArea("f-instructions", "instructions", form.instructions, 14, d, html` class="mono"`), placed)}
    </fieldset>
    ${repeatSection("file", "Package files", form.files, placed, "No package files.")}
    <div class="save-bar">
      ${
        creating
          ? html``
          : html`<div class="field change-note"><label for="f-change-note">Change note (optional)</label>
          <input id="f-change-note" name="changeNote" data-guard-ignore maxlength="2000" autocomplete="off" aria-describedby="hint-change-note">
          <p class="hint" id="hint-change-note">What changed and why; stored with the version. Saving without a change adds no version.</p></div>`
      }
      <button type="submit" class="primary">${creating ? "Create agent" : "Save as new version"}</button>
      <p id="preview-status" class="preview-status" role="status">${previewStatus(placed, props.checked)}</p>
    </div>
  </form>`
}

export const editorPage = (ctx: PageContext, props: EditorProps): Html =>
  layout(
    ctx,
    props.agent === null ? "New agent" : props.agent.name,
    html`
  ${
    props.agent === null
      ? pageHeader("New agent", {
          crumbs: [["/agents", "Agents"]],
          meta: html`<p class="muted">Fill in the manifest and the instructions; problems show while you type.</p>`
        })
      : agentHeader(ctx, props.agent, "agent", props.notice, props.copy ?? null)
  }
  ${editorForm(ctx, props)}`
  )
