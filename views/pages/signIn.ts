/** The sign-in page: a plain form (works without JavaScript), the error of a failed attempt, where to go next. */
import { alert } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

export interface SignInProps {
  readonly username: string
  /** Where to go after signing in (a local path). */
  readonly next: string
  readonly error: string | null
  readonly notice: string | null
}

export const signInPage = (ctx: PageContext, props: SignInProps): Html =>
  layout(
    ctx,
    "Sign in",
    html`
  <section class="narrow card">
    <h1>Sign in</h1>
    <p class="muted">Administration of the Kintsugi runtime: agents, skills, imports.</p>
    ${props.error === null ? html`` : alert("error", props.error)}
    ${props.notice === null ? html`` : alert("info", props.notice)}
    <form method="post" action="/sign-in" class="stack">
      <input type="hidden" name="next" value="${props.next}">
      <div class="field">
        <label for="username">Username</label>
        <input id="username" name="username" autocomplete="username" required autofocus value="${props.username}">
      </div>
      <div class="field">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
      </div>
      <button type="submit" class="primary">Sign in</button>
    </form>
  </section>`
  )
