/**
 * User administration for holders of every admin permission: the users list with the new-user form,
 * and one user's page (permissions, password reset, disable or enable). Every change applies at once.
 */
import type { Permission, UserView } from "../../src/access/Access.ts"
import type { Problem } from "../../src/contract/Problem.ts"
import { alert, badge, fieldProblems, generalProblems, pageHeader, placedSummary, slotId, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { csrfField, layout, type PageContext } from "../layout.ts"

/** What each permission lets its holder do (the portal's words). */
const PERMISSION_HINTS: ReadonlyArray<readonly [Permission, string]> = [
  ["agents.manage", "create and change agents, skills, projects; run jobs"],
  ["providers.manage", "LLM providers, model bindings, MCP servers, web search"],
  ["metrics.read", "read /metrics from another machine"],
  ["transcripts.read", "read job transcripts (what the model saw) of projects that keep them"]
]

export const userHref = (username: string, rest = ""): string => `/users/${encodeURIComponent(username)}${rest}`

export interface NewUserForm {
  readonly username: string
  readonly permissions: ReadonlyArray<string>
}

const NEW_USER_LABELS: Readonly<Record<string, string>> = { username: "Username", password: "Password", permissions: "Permissions" }
const newUserSlot = (p: Problem): string =>
  p.path === "username" || p.path === "password" ? p.path : p.path.startsWith("permissions") ? "permissions" : "general"

const permissionChecks = (idPrefix: string, checked: ReadonlyArray<string>): Html =>
  html`<div class="check-list">${PERMISSION_HINTS.map(
    ([p, hint]) =>
      html`<label class="check" for="${idPrefix}-${p}"><input type="checkbox" id="${idPrefix}-${p}" name="permissions" value="${p}"${
        checked.includes(p) ? html` checked` : html``
      }> <span><code>${p}</code> <span class="muted">${hint}</span></span></label>`
  )}</div>`

const userRow = (ctx: PageContext, u: UserView): Html => {
  const self = ctx.viewer?.username === u.username
  return html`<tr>
  <td data-label="User"><a class="agent-name" href="${userHref(u.username)}">${u.username}</a>${self ? html` <span class="muted">(you)</span>` : html``}</td>
  <td data-label="Permissions">${
    u.permissions.length === 0
      ? html`<span class="muted">read only</span>`
      : u.permissions.map(
          (p) => html`<form method="post" action="${userHref(u.username, `/permissions/${p}/remove`)}" class="inline">${csrfField(ctx)}
            ${badge("info", p)} <button type="submit" class="small link" aria-label="Remove ${p} from ${u.username}">remove</button></form>`
        )
  }</td>
  <td data-label="Status">${u.disabledAt === null ? badge("ok", "enabled") : badge("error", "disabled")}</td>
  <td data-label="Created">${time(u.createdAt)}</td>
  <td data-label="Action">${
    self
      ? html``
      : html`<form method="post" action="${userHref(u.username, "/disabled")}" class="inline">${csrfField(ctx)}
        <input type="hidden" name="disabled" value="${u.disabledAt === null ? "true" : "false"}">
        <button type="submit" class="small ${u.disabledAt === null ? "danger" : "secondary"}">${u.disabledAt === null ? "Disable" : "Enable"}</button></form>`
  }</td>
</tr>`
}

export const usersPage = (
  ctx: PageContext,
  users: ReadonlyArray<UserView>,
  options: { readonly notice: string | null; readonly form: NewUserForm; readonly problems: ReadonlyArray<Problem> }
): Html => {
  const problemsAt = (slot: string) => options.problems.filter((p) => newUserSlot(p) === slot)
  return layout(
    ctx,
    "Users",
    html`
  ${pageHeader("Users", {
    crumbs: [["/account", "API tokens"]],
    meta: html`<p class="muted">Changes apply at once, while jobs run. An admin holds agents.manage and providers.manage; there is always at least one enabled admin. Disabling a user ends their sessions and stops their tokens.</p>`
  })}
  ${options.notice === null ? html`` : alert("ok", options.notice)}
  <table class="catalog">
    <thead><tr><th scope="col">User</th><th scope="col">Permissions</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody hx-disable>${users.map((u) => userRow(ctx, u))}</tbody>
  </table>
  <form method="post" action="/users" class="stack card" novalidate data-unsaved-guard>
    <h2>New user</h2>
    ${csrfField(ctx)}
    ${placedSummary(
      options.problems.map((p) => [newUserSlot(p), p] as const),
      NEW_USER_LABELS,
      "user-general"
    )}
    ${generalProblems("user-general", problemsAt("general"))}
    <div class="grid-2">
      <div class="field"><label for="f-username">Username</label>
        <p class="hint" id="hint-username">a-z, 0-9 and . _ @ -, up to 64 characters.</p>
        <input id="f-username" name="username" value="${options.form.username}" maxlength="64" autocomplete="off" spellcheck="false" aria-describedby="hint-username ${slotId("username")}">
        ${fieldProblems("username", problemsAt("username"))}</div>
      <div class="field"><label for="f-password">Password</label>
        <p class="hint" id="hint-password">At least 12 characters; they can change it once signed in.</p>
        <input id="f-password" name="password" type="password" autocomplete="new-password" aria-describedby="hint-password ${slotId("password")}">
        ${fieldProblems("password", problemsAt("password"))}</div>
    </div>
    <fieldset><legend>Permissions</legend>
      ${permissionChecks("new", options.form.permissions)}
      ${fieldProblems("permissions", problemsAt("permissions"))}
    </fieldset>
    <div class="save-bar"><button type="submit" class="primary">Create user</button></div>
  </form>`
  )
}

export interface UserPageProblems {
  readonly permissions: ReadonlyArray<Problem>
  readonly password: ReadonlyArray<Problem>
}

/** One user: their permissions (checkboxes), a password reset, and disabling. */
export const userPage = (
  ctx: PageContext,
  user: UserView,
  options: { readonly notice: string | null; readonly problems: UserPageProblems }
): Html => {
  const self = ctx.viewer?.username === user.username
  return layout(
    ctx,
    user.username,
    html`
  ${pageHeader(html`<span hx-disable>${user.username}</span>`, {
    crumbs: [["/users", "Users"]],
    meta: html`<p class="muted">${user.disabledAt === null ? badge("ok", "enabled") : badge("error", "disabled")} Created ${time(user.createdAt)}.${self ? " This is you." : ""}</p>`
  })}
  ${options.notice === null ? html`` : alert("ok", options.notice)}
  <form method="post" action="${userHref(user.username, "/permissions")}" class="stack card" novalidate data-unsaved-guard>
    <h2>Permissions</h2>
    ${csrfField(ctx)}
    ${generalProblems("permissions-general", options.problems.permissions, "The permissions were not changed")}
    <input type="hidden" name="permissions" value="">
    ${permissionChecks("perm", user.permissions)}
    <div class="actions"><button type="submit" class="primary">Save permissions</button></div>
  </form>
  <form method="post" action="${userHref(user.username, "/password")}" class="stack card" novalidate data-unsaved-guard>
    <h2>Reset password</h2>
    ${csrfField(ctx)}
    <div class="field"><label for="f-reset">New password</label>
      <p class="hint" id="hint-reset">At least 12 characters. Ends ${self ? "your" : "their"} sessions at once; API tokens keep working.</p>
      <input id="f-reset" name="password" type="password" autocomplete="new-password" aria-describedby="hint-reset ${slotId("reset")}">
      ${fieldProblems("reset", options.problems.password)}</div>
    <div class="actions"><button type="submit" class="secondary">Set password</button></div>
  </form>
  ${
    self
      ? html``
      : html`<form method="post" action="${userHref(user.username, "/disabled")}" class="stack card" data-unsaved-guard>
    <h2>${user.disabledAt === null ? "Disable" : "Enable"}</h2>
    ${csrfField(ctx)}
    <p class="muted">${user.disabledAt === null ? "Ends their sessions; their tokens and sign-in are refused until enabled again." : "They can sign in again and their tokens work again."}</p>
    <input type="hidden" name="disabled" value="${user.disabledAt === null ? "true" : "false"}">
    <div class="actions"><button type="submit" class="${user.disabledAt === null ? "danger" : "secondary"}">${user.disabledAt === null ? "Disable" : "Enable"} ${user.username}</button></div>
  </form>`
  }`
  )
}
