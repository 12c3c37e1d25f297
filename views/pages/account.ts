/**
 * Your account: API tokens (list, create — the value shown once — and revoke) and your password
 * (the change form asks for the current one).
 */
import type { TokenView } from "../../src/access/Access.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import { alert, badge, emptyState, fieldProblems, generalProblems, pageHeader, placedSummary, slotId, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

export interface TokenForm {
  readonly name: string
  readonly expiresInDays: string
}

const TOKEN_LABELS: Readonly<Record<string, string>> = { name: "Name", expiresInDays: "Expires after", general: "Token" }
const tokenSlot = (p: Problem): string => (p.path === "name" || p.path === "expiresInDays" ? p.path : "general")

const STATUS_TONE = { active: "ok", expired: "muted", revoked: "error" } as const

const isAdminViewer = (ctx: PageContext): boolean =>
  ctx.viewer !== null && ["agents.manage", "providers.manage"].every((p) => ctx.viewer?.permissions.includes(p) === true)

const tokenRow = (ctx: PageContext, t: TokenView): Html => html`<tr>
  <td data-label="Name"><span class="agent-name">${t.name}</span></td>
  <td data-label="Status">${badge(STATUS_TONE[t.status], t.status)}</td>
  <td data-label="Created">${time(t.createdAt)}</td>
  <td data-label="Last used">${time(t.lastUsedAt)}</td>
  <td data-label="Expires">${time(t.expiresAt)}</td>
  <td data-label="Action">${
    t.status === "active"
      ? html`<form method="post" action="/account/tokens/${t.id}/revoke" class="inline">${csrfField(ctx)}
        <button type="submit" class="small danger" aria-label="Revoke ${t.name}">Revoke</button></form>`
      : html``
  }</td>
</tr>`

export const accountPage = (
  ctx: PageContext,
  tokens: ReadonlyArray<TokenView>,
  options: {
    readonly form: TokenForm
    readonly problems: ReadonlyArray<Problem>
    readonly created: { readonly name: string; readonly secret: string } | null
    readonly notice: string | null
  }
): Html => {
  const problemsAt = (slot: string) => options.problems.filter((p) => tokenSlot(p) === slot)
  return layout(
    ctx,
    "API tokens",
    html`
  ${pageHeader("API tokens", {
    meta: html`<p class="muted">Programs send a token as <code>Authorization: Bearer …</code>; it acts with your permissions until it expires or you revoke it.</p>`,
    actions: html`<a class="button secondary" href="/account/password">Change password</a>${isAdminViewer(ctx) ? html` <a class="button secondary" href="/users">Users</a>` : html``}`
  })}
  ${options.notice === null ? html`` : alert("ok", options.notice)}
  ${
    options.created === null
      ? html``
      : alert(
          "ok",
          html`<p>Copy it now: it is shown only this once.</p>
          <div hx-disable><input id="new-token" class="mono" readonly value="${options.created.secret}" aria-label="The new token" spellcheck="false"></div>`,
          `Created the token ${options.created.name}.`
        )
  }
  ${
    tokens.length === 0
      ? emptyState("No API token yet.", "Create one below for a script or CI job.")
      : html`<table class="catalog">
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
      <tbody hx-disable>${tokens.map((t) => tokenRow(ctx, t))}</tbody></table>`
  }
  <form method="post" action="/account/tokens" class="stack card" novalidate data-unsaved-guard>
    <h2>New token</h2>
    ${csrfField(ctx)}
    ${placedSummary(
      options.problems.map((p) => [tokenSlot(p), p] as const),
      TOKEN_LABELS,
      "token-general"
    )}
    ${generalProblems("token-general", problemsAt("general"))}
    <div class="grid-2">
      <div class="field"><label for="f-name">Name</label>
        <p class="hint" id="hint-name">What uses it, e.g. “ci” or “laptop”.</p>
        <input id="f-name" name="name" value="${options.form.name}" maxlength="64" autocomplete="off" aria-describedby="hint-name problems-name">
        ${fieldProblems("name", problemsAt("name"))}</div>
      <div class="field"><label for="f-expiresInDays">Expires after (days)</label>
        <p class="hint" id="hint-expiresInDays">1 to 365; a token cannot live forever.</p>
        <input id="f-expiresInDays" name="expiresInDays" inputmode="numeric" value="${options.form.expiresInDays}" aria-describedby="hint-expiresInDays problems-expiresInDays">
        ${fieldProblems("expiresInDays", problemsAt("expiresInDays"))}</div>
    </div>
    <div class="save-bar"><button type="submit" class="primary">Create token</button></div>
  </form>`
  )
}

export interface PasswordForm {
  readonly problems: ReadonlyArray<Problem>
}

const PASSWORD_LABELS: Readonly<Record<string, string>> = {
  currentPassword: "Current password",
  newPassword: "New password",
  confirmPassword: "New password again"
}
const passwordSlot = (p: Problem): string => (p.path in PASSWORD_LABELS ? p.path : "general")

/** Your password: the current one, the new one twice. Your other sessions end; this one stays. */
export const passwordPage = (ctx: PageContext, form: PasswordForm): Html => {
  const problemsAt = (slot: string) => form.problems.filter((p) => passwordSlot(p) === slot)
  const field = (
    name: string,
    autocomplete: string,
    hint: string
  ) => html`<div class="field"><label for="f-${name}">${PASSWORD_LABELS[name] ?? name}</label>
      ${hint === "" ? html`` : html`<p class="hint" id="hint-${name}">${hint}</p>`}
      <input id="f-${name}" name="${name}" type="password" autocomplete="${autocomplete}" aria-describedby="${hint === "" ? "" : `hint-${name} `}${slotId(name)}">
      ${fieldProblems(name, problemsAt(name))}</div>`
  return layout(
    ctx,
    "Change password",
    html`
  ${pageHeader("Change password", { crumbs: [["/account", "API tokens"]] })}
  <form method="post" action="/account/password" class="stack card narrow" novalidate data-unsaved-guard>
    ${csrfField(ctx)}
    ${placedSummary(
      form.problems.map((p) => [passwordSlot(p), p] as const),
      PASSWORD_LABELS,
      "password-general"
    )}
    ${generalProblems("password-general", problemsAt("general"))}
    <input type="text" name="username" autocomplete="username" value="${ctx.viewer?.username ?? ""}" hidden>
    ${field("currentPassword", "current-password", "")}
    ${field("newPassword", "new-password", "At least 12 characters. Your other sessions end; this one stays signed in.")}
    ${field("confirmPassword", "new-password", "")}
    <div class="save-bar"><button type="submit" class="primary">Change password</button></div>
  </form>`
  )
}
