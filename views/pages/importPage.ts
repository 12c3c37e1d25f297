/** Import: upload an agent's `.md` file(s) or a package `.zip`; every problem is listed and nothing is saved unless there is none. */
import type { Problem } from "../../src/contract/Problem.ts"
import { alert, pageHeader, problemList } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export interface ImportResult {
  readonly message: string
  readonly problems: ReadonlyArray<Problem>
}

/** A successful import that adapted something (a Claude Code subagent file, an Agent Skill): what and how. */
export interface ImportDone {
  readonly kind: "agent" | "skill"
  readonly name: string
  readonly href: string
  /** The agent's version when the upload equalled it (no version added), else null. */
  readonly unchanged: number | null
  readonly notes: ReadonlyArray<string>
  /** What the import left out (Claude Code tools without an equivalent), one line each. */
  readonly warnings: ReadonlyArray<string>
  readonly toolMapping: ReadonlyArray<{ readonly from: string; readonly to: string | null }>
}

export const importDone = (done: ImportDone): Html =>
  html`${
    done.warnings.length === 0
      ? html``
      : alert(
          "warn",
          html`<ul class="warnings">${done.warnings.map((w) => html`<li hx-disable>${w}</li>`)}</ul>`,
          `Imported without ${done.warnings.length === 1 ? "one tool" : `${done.warnings.length} tools`}:`
        )
  }${alert(
    "ok",
    html`<a href="${done.href}">Open ${done.kind === "agent" ? "the agent" : "the shared skill"} ${done.name}</a>
        ${
          done.toolMapping.length === 0
            ? html``
            : html`<table class="mapping"><caption>Tool names mapped</caption>
          <thead><tr><th scope="col">In the file</th><th scope="col">Kintsugi tool</th></tr></thead>
          <tbody>${done.toolMapping.map((m) => html`<tr><td hx-disable>${m.from}</td><td>${m.to ?? (done.kind === "agent" ? "dropped" : "none")}</td></tr>`)}</tbody></table>`
        }
        <ul class="notes">${done.notes.map((n) => html`<li hx-disable>${n}</li>`)}</ul>`,
    done.unchanged !== null
      ? `No change: version ${done.unchanged} is already this package.`
      : done.kind === "agent"
        ? "Agent imported."
        : "Shared skill imported."
  )}`

/** What an import that saved nothing says: the reason and every problem. */
export const importResult = (result: ImportResult | null): Html =>
  result === null
    ? html``
    : alert("error", html`<span hx-disable>${result.message}</span>${problemList(result.problems)}`, "Nothing was imported.")

export const importPage = (ctx: PageContext, result: ImportResult | null, done: ImportDone | null = null): Html =>
  layout(
    ctx,
    "Import an agent",
    html`
  ${pageHeader("Import an agent", { crumbs: [["/agents", "Agents"]] })}
  <section class="card narrow-wide">
    <p>Upload a package as a <strong>.zip</strong> (the package folder, zipped), or the agent's <strong>&lt;name&gt;.md</strong> file.
      Claude Code subagent files import too (tool names are mapped, tools without a Kintsugi equivalent dropped with a warning,
      other keys kept in metadata), and so do Agent Skills:
      a <strong>SKILL.md</strong>, or its folder zipped with its resources, becomes a shared skill.</p>
    <p>
      A package with the name of an existing custom agent becomes its next version; built-in names are reserved.</p>
    <p class="muted">Every file is checked first: when anything is wrong, every problem is listed and nothing is saved.</p>
    ${
      ctx.viewer?.canManage === true
        ? html`<form method="post" action="/agents/-/import" enctype="multipart/form-data" class="stack"
              hx-post="/agents/-/import" hx-encoding="multipart/form-data" hx-target="#import-result" hx-disabled-elt="find button">
            ${csrfField(ctx)}
            <div class="field">
              <label for="import-files">Package files</label>
              <input id="import-files" type="file" name="files" multiple required accept=".zip,.md,application/zip,text/markdown" aria-describedby="import-result">
            </div>
            <label class="check"><input type="checkbox" name="strict" value="1">
              Refuse Claude Code tools without a Kintsugi equivalent (<code>Agent</code>, <code>TodoWrite</code>, …) instead of dropping them</label>
            <button type="submit" class="primary">Check and import</button>
          </form>`
        : alert("info", "Importing needs the agents.manage permission.")
    }
    <div id="import-result" aria-live="polite">${done === null ? importResult(result) : importDone(done)}</div>
  </section>`
  )
