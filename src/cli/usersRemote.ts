/**
 * `kintsugi users …` against a running server, through its API as the token's user (an admin): the
 * same operations and output as on the data dir, so nothing waits for the server to stop. A new API
 * token is the exception: the server makes one only for a signed-in session.
 */
import { Option, Schema } from "effect"
import type { Remote } from "./runRemote.ts"
import {
  doneLine,
  readPassword,
  tokenJson,
  tokenLine,
  userJson,
  userLines,
  type TokenShown,
  type UserShown,
  type UsersIo,
  type UsersOp
} from "../access/usersIo.ts"

interface Answer {
  readonly status: number
  readonly body: unknown
}

// What the API answers, decoded (fields beyond these are ignored).
const ApiUser = Schema.Struct({
  username: Schema.String,
  permissions: Schema.Array(Schema.String),
  createdAt: Schema.String,
  disabledAt: Schema.NullOr(Schema.String)
})
const ApiToken = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  expiresAt: Schema.String
})
type ApiUser = typeof ApiUser.Type
type ApiToken = typeof ApiToken.Type
const decodeUsers = Schema.decodeUnknownOption(Schema.Struct({ users: Schema.Array(ApiUser) }))
const decodeTokens = Schema.decodeUnknownOption(Schema.Struct({ tokens: Schema.Array(ApiToken) }))
const decodeError = Schema.decodeUnknownOption(
  Schema.Struct({
    error: Schema.Struct({
      message: Schema.String,
      problems: Schema.optional(Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })))
    })
  })
)

const date = (s: string | null): Date | null => (s === null ? null : new Date(s))
const userShown = (u: ApiUser): UserShown => ({
  username: u.username,
  permissions: u.permissions,
  createdAt: new Date(u.createdAt),
  disabledAt: date(u.disabledAt)
})
const tokenShown = (t: ApiToken): TokenShown => ({
  ...t,
  createdAt: new Date(t.createdAt),
  lastUsedAt: date(t.lastUsedAt),
  expiresAt: new Date(t.expiresAt)
})

/** The refusal in an API error body, with every problem named. */
const refusal = (remote: Remote, a: Answer): string => {
  if (a.status === 401)
    return `the server at ${remote.url} refused the token; issue a new one on the portal's account page (${remote.url}/account)`
  const error = Option.getOrUndefined(decodeError(a.body))?.error
  const problems = (error?.problems ?? []).map((p) => `${p.path}: ${p.message}`)
  if (problems.length > 0) return problems.join("; ")
  return (
    error?.message ??
    (a.status < 300 ? "the server's answer is not what this kintsugi expects (another version?)" : `the server answered HTTP ${a.status}`)
  )
}

const segment = encodeURIComponent

/**
 * Runs one users operation through the server's API; resolves to the exit code (0 done, 1 refused).
 * Never rejects: an unreachable server is a refusal with its reason.
 */
export const runUsersRemote = async (o: UsersOp, remote: Remote & { readonly token: string }, io: UsersIo): Promise<number> => {
  const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const r = await fetch(`${remote.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${remote.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await r.text()
    let parsed: unknown = undefined
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: r.status, body: parsed }
  }
  const users = async (): Promise<ReadonlyArray<ApiUser> | Answer> => {
    const a = await call("GET", "/api/admin/users")
    return a.status === 200 ? Option.match(decodeUsers(a.body), { onNone: () => a, onSome: (b) => b.users }) : a
  }
  const tokens = async (username: string): Promise<ReadonlyArray<ApiToken> | Answer> => {
    const a = await call("GET", `/api/admin/users/${segment(username)}/tokens`)
    return a.status === 200 ? Option.match(decodeTokens(a.body), { onNone: () => a, onSome: (b) => b.tokens }) : a
  }
  const isAnswer = (x: unknown): x is Answer => typeof x === "object" && x !== null && "status" in x && !Array.isArray(x)
  const done = (line: string) => {
    io.out(line)
    return 0
  }
  const refused = (a: Answer) => {
    io.err(`kintsugi users: ${refusal(remote, a)}`)
    return 1
  }
  const expect = (a: Answer, status: number, line: string) => (a.status === status ? done(line) : refused(a))

  try {
    switch (o.op) {
      case "list": {
        const found = await users()
        if (isAnswer(found)) return refused(found)
        const shown = found.map(userShown)
        return done(o.json === true ? JSON.stringify(shown.map(userJson)) : shown.length === 0 ? "no users" : userLines(shown))
      }
      case "add":
        return expect(
          await call("POST", "/api/admin/users", { username: o.username, password: await readPassword(io), permissions: o.grants }),
          201,
          doneLine(o)
        )
      case "password":
        return expect(
          await call("POST", `/api/admin/users/${segment(o.username)}/password`, { password: await readPassword(io) }),
          204,
          doneLine(o)
        )
      case "grant": {
        // The API sets the whole set: the user's permissions as they are, plus this one.
        const found = await users()
        if (isAnswer(found)) return refused(found)
        const user = found.find((u) => u.username === o.username)
        if (user === undefined) return refused({ status: 404, body: { error: { message: `no user "${o.username}"` } } })
        const permissions = [...new Set([...user.permissions, o.permission])]
        return expect(await call("PUT", `/api/admin/users/${segment(o.username)}/permissions`, { permissions }), 200, doneLine(o))
      }
      case "revoke":
        return expect(
          await call("DELETE", `/api/admin/users/${segment(o.username)}/permissions/${segment(o.permission)}`),
          204,
          doneLine(o)
        )
      case "disable":
      case "enable":
        return expect(await call("PATCH", `/api/admin/users/${segment(o.username)}`, { disabled: o.op === "disable" }), 200, doneLine(o))
      case "token":
        io.err(
          `kintsugi users: a running server (${remote.url}) makes API tokens only for a signed-in session: ` +
            `sign in as ${o.username} on the portal's account page (${remote.url}/account) or POST /api/tokens with a session`
        )
        return 1
      case "tokens": {
        const found = await tokens(o.username)
        if (isAnswer(found)) return refused(found)
        const shown = found.map(tokenShown)
        return done(
          o.json === true
            ? JSON.stringify(shown.map(tokenJson))
            : shown.length === 0
              ? `${o.username} has no API tokens`
              : shown.map(tokenLine).join("\n")
        )
      }
      case "revoke-token": {
        const found = await tokens(o.username)
        const name = isAnswer(found) ? undefined : found.find((t) => t.id === o.id.toLowerCase())?.name
        const a = await call("DELETE", `/api/admin/users/${segment(o.username)}/tokens/${segment(o.id)}`)
        return expect(a, 204, `revoked token ${o.id.toLowerCase()}${name === undefined ? "" : ` (${name})`} of ${o.username}`)
      }
    }
  } catch (e) {
    io.err(`kintsugi users: cannot reach the server at ${remote.url}: ${e instanceof Error ? e.message : String(e)}`)
    return 1
  }
}
