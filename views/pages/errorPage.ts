/** Errors as HTML: a fragment for htmx requests (swapped into the toast region) and a full page otherwise. */
import type { Problem } from "../../src/contract/Problem.ts"
import { agentHref, problemList } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

export interface ErrorProps {
  readonly status: number
  readonly title: string
  readonly message: string
  readonly problems: ReadonlyArray<Problem>
  /** Agents named by the error (a shared skill still in use). */
  readonly agents: ReadonlyArray<string>
  /** Offer a sign-in link (the session ended). */
  readonly signIn: boolean
}

const details = (props: ErrorProps): Html => html`
  <p hx-disable>${props.message}</p>
  ${problemList(props.problems)}
  ${
    props.agents.length === 0
      ? html``
      : html`<p>Used by:</p><ul class="inline-list" hx-disable>${props.agents.map((a) => html`<li><a href="${agentHref(a)}">${a}</a></li>`)}</ul>`
  }
  ${props.signIn ? html`<p><a href="/sign-in">Sign in again</a> (in another tab keeps this page as it is).</p>` : html``}`

export const errorFragment = (props: ErrorProps): Html => html`
  <div class="toast toast-error" data-status="${props.status}">
    <button type="button" class="toast-close" data-dismiss aria-label="Dismiss">x</button>
    <strong>${props.title}</strong>
    ${details(props)}
  </div>`

export const errorPage = (ctx: PageContext, props: ErrorProps): Html =>
  layout(
    ctx,
    props.title,
    html`
  <section class="narrow card">
    <h1>${props.title}</h1>
    ${details(props)}
    <p><a href="/agents">Back to the agents</a></p>
  </section>`
  )
