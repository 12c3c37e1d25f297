/**
 * An in-process harness for the HTTP API: one app runtime over a fresh test database per test file,
 * the Elysia app driven through `app.handle`, two users (a manager and a reader without permission)
 * with API tokens, sign-in helpers, and a check of every error body that passes through.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { afterAll, beforeAll } from "bun:test"
import { Effect, type Exit } from "effect"
import { Access, type Permission } from "../../src/access/Access.ts"
import type { makeApp } from "../../src/http/app.ts"
import { CSRF_HEADER, SESSION_COOKIE } from "../../src/http/auth.ts"
import type { Db } from "../../src/db/Db.ts"
import type { AppServices } from "../../src/http/route.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import type { testJobRoots } from "./jobRoots.ts"
import { makeTestApp, type TestRuntime } from "./testApp.ts"

export const ORIGIN = "http://localhost"
export const HOST = "localhost"

export type AppRuntime = TestRuntime
export type App = ReturnType<typeof makeApp>
type RuntimeServices = AppServices | Db

export interface User {
  readonly username: string
  readonly password: string
  /** An API token (Bearer) of this user. */
  readonly token: string
}

/** A portal session: the cookie pair to send back and the session's CSRF token. */
export interface Session {
  /** `__Host-kintsugi-session=<value>`, as a browser sends it. */
  readonly cookie: string
  readonly csrfToken: string
  /** The raw Set-Cookie header of the sign-in response. */
  readonly setCookie: string
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string
  /** Sends the session cookie; with `csrf: true` (the default) also the CSRF header and same-origin headers. */
  readonly session?: Session
  readonly csrf?: boolean
  /** JSON-encoded with `content-type: application/json`. */
  readonly json?: unknown
  /** A portal form (urlencoded or multipart); with a session, `_csrf` is added unless `csrf: false`. */
  readonly form?: URLSearchParams | FormData
  /** A raw body (wins over `json` and `form`). */
  readonly body?: RequestInit["body"]
  readonly headers?: Record<string, string>
}

export interface ApiResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly bytes: Uint8Array
  /** The body parsed as JSON (throws when it is not JSON). */
  readonly json: <T = JsonObject>() => T
}

export type JsonObject = { readonly [key: string]: any }

export interface ErrorRecord {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly body: string
}

export interface Api {
  readonly app: App
  readonly runtime: AppRuntime
  /** agents.manage + providers.manage. */
  readonly manager: User
  /** Signed in, no permission. */
  readonly reader: User
  readonly request: (method: string, path: string, options?: RequestOptions) => Promise<ApiResponse>
  /** POST /api/session with these credentials; fails the test when sign-in is refused. */
  readonly signIn: (username: string, password: string) => Promise<Session>
  readonly run: <A, E>(effect: Effect.Effect<A, E, RuntimeServices>) => Promise<A>
  readonly runExit: <A, E>(effect: Effect.Effect<A, E, RuntimeServices>) => Promise<Exit.Exit<A, E>>
  /** Raw SQL on this file's database. */
  readonly sql: <T extends object = JsonObject>(query: string) => Promise<ReadonlyArray<T>>
  /** Creates a user with a token. */
  readonly createUser: (username: string, permissions: ReadonlyArray<Permission>) => Promise<User>
  /** Every error response (status ≥ 400) this file has seen, in order. */
  readonly errors: ReadonlyArray<ErrorRecord>
  /** Lines the app logged (defects only). */
  readonly logs: ReadonlyArray<string>
}

const ERROR_KEYS = new Set(["code", "message", "problems", "agents"])
/** What must never reach a client: stack frames and host paths. */
export const LEAK_MARKERS = ["at /", "/work/", "node_modules", "    at "] as const

/** The first leak marker in `text`, as a problem. */
export const leakIn = (text: string): string | undefined => {
  const marker = LEAK_MARKERS.find((m) => text.includes(m))
  return marker === undefined ? undefined : `leaks ${JSON.stringify(marker)}`
}

/**
 * Why an error body breaks the stable shape `{ error: { code, message, problems?, agents? } }` or leaks
 * internals; undefined when it is fine.
 */
export const errorBodyProblem = (status: number, text: string): string | undefined => {
  const leak = leakIn(text)
  if (leak !== undefined) return leak
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return "is not JSON"
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) return "is not an object"
  const keys = Object.keys(body)
  if (keys.length !== 1 || keys[0] !== "error") return `has top-level keys ${JSON.stringify(keys)}`
  const error = (body as { error: unknown }).error
  if (error === null || typeof error !== "object" || Array.isArray(error)) return "error is not an object"
  const e = error as Record<string, unknown>
  for (const k of Object.keys(e)) if (!ERROR_KEYS.has(k)) return `error has an unexpected key ${JSON.stringify(k)}`
  if (typeof e["code"] !== "string" || !/^[a-z]+(-[a-z]+)*$/.test(e["code"]))
    return `error.code ${JSON.stringify(e["code"])} is not a kebab-case string`
  if (typeof e["message"] !== "string" || e["message"].length === 0) return "error.message is not a non-empty string"
  if ("problems" in e) {
    const ps = e["problems"]
    if (!Array.isArray(ps)) return "error.problems is not a list"
    for (const p of ps) {
      if (
        p === null ||
        typeof p !== "object" ||
        typeof p.path !== "string" ||
        typeof p.message !== "string" ||
        Object.keys(p).length !== 2
      ) {
        return `error.problems holds ${JSON.stringify(p)}, not { path, message }`
      }
    }
  }
  if ("agents" in e && (!Array.isArray(e["agents"]) || !e["agents"].every((a) => typeof a === "string")))
    return "error.agents is not a list of names"
  if (status === 500 && e["code"] !== "internal") return "a 500 that is not the generic internal error"
  return undefined
}

export const PASSWORD = "correct horse battery staple"

export { testSecrets } from "./testApp.ts"

/**
 * Registers beforeAll/afterAll for the calling test file: the one harness (`makeTestApp`, testApp.ts),
 * the app, a `manager` and a `reader`. Call at the top level of a test file.
 */
export const useApi = (options: { readonly jobRoots?: ReturnType<typeof testJobRoots> } = {}): Api => {
  let runtime: AppRuntime | undefined
  let app: App | undefined
  let manager: User | undefined
  let reader: User | undefined
  const errors: Array<ErrorRecord> = []
  const logs: Array<string> = []
  const live = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("useApi: used outside the test file's tests")
    return v
  }

  const createUser = async (username: string, permissions: ReadonlyArray<Permission>): Promise<User> => {
    const rt = live(runtime)
    await rt.runPromise(Effect.flatMap(Access, (a) => a.addUser(username, PASSWORD, permissions)))
    const token = await rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken(username, `${username}-test`)))
    return { username, password: PASSWORD, token }
  }

  beforeAll(async () => {
    const made = await makeTestApp({
      ...(options.jobRoots === undefined ? {} : { jobRoots: options.jobRoots }),
      appLog: (line) => logs.push(line)
    })
    runtime = made.runtime
    app = made.app
    manager = await createUser("manager", ["agents.manage", "providers.manage"])
    reader = await createUser("reader", [])
  }, 120_000)
  afterAll(async () => {
    const rt = runtime
    runtime = undefined
    await rt?.dispose()
  }, 60_000)

  const request = async (method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { host: HOST }
    if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
    if (options.session !== undefined) {
      headers["cookie"] = options.session.cookie
      if (options.csrf !== false) {
        headers[CSRF_HEADER] = options.session.csrfToken
        headers["origin"] = ORIGIN
        headers["sec-fetch-site"] = "same-origin"
      }
    }
    let body: RequestInit["body"] | undefined
    if (options.body !== undefined) body = options.body
    else if (options.form !== undefined) {
      const form = options.form instanceof FormData ? options.form : new URLSearchParams(options.form)
      if (options.session !== undefined && options.csrf !== false) form.set("_csrf", options.session.csrfToken)
      if (form instanceof URLSearchParams) headers["content-type"] = "application/x-www-form-urlencoded"
      body = form
    } else if (options.json !== undefined) {
      body = JSON.stringify(options.json)
      headers["content-type"] = "application/json"
    }
    Object.assign(headers, options.headers)
    const response = await live(app).handle(new Request(`${ORIGIN}${path}`, { method, headers, ...(body === undefined ? {} : { body }) }))
    const bytes = new Uint8Array(await response.arrayBuffer())
    const text = new TextDecoder().decode(bytes)
    if (response.status >= 400 && method !== "HEAD") {
      errors.push({ method, path, status: response.status, body: text })
      // The JSON API has one error shape; portal pages are HTML, checked for leaks only.
      const problem = path.startsWith("/api/") ? errorBodyProblem(response.status, text) : leakIn(text)
      if (problem !== undefined) throw new Error(`${method} ${path} → ${response.status}: the error body ${problem}: ${text.slice(0, 500)}`)
    }
    return { status: response.status, headers: response.headers, text, bytes, json: <T>() => JSON.parse(text) as T }
  }

  const signIn = async (username: string, password: string): Promise<Session> => {
    const r = await request("POST", "/api/session", { json: { username, password } })
    if (r.status !== 200) throw new Error(`sign-in of ${username} refused: ${r.status} ${r.text}`)
    const setCookie = r.headers.get("set-cookie") ?? ""
    const pair = setCookie.split(";")[0] ?? ""
    if (!pair.startsWith(`${SESSION_COOKIE}=`)) throw new Error(`sign-in set no session cookie: ${setCookie}`)
    return { cookie: pair, csrfToken: r.json<{ user: { csrfToken: string } }>().user.csrfToken, setCookie }
  }

  return {
    get app() {
      return live(app)
    },
    get runtime() {
      return live(runtime)
    },
    get manager() {
      return live(manager)
    },
    get reader() {
      return live(reader)
    },
    request,
    signIn,
    run: (effect) => live(runtime).runPromise(effect),
    runExit: (effect) => live(runtime).runPromiseExit(effect),
    sql: <T extends object>(query: string) => live(runtime).runPromise(Effect.flatMap(SqlClient, (sql) => sql.unsafe<T>(query))),
    createUser,
    errors,
    logs
  }
}

/** A valid runtime agent package as the API takes it (`{ files }`), with optional overrides per path. */
export const createAgentFiles = (
  name: string,
  options: {
    readonly description?: string
    readonly instructions?: string
    readonly tools?: ReadonlyArray<string>
    readonly skills?: ReadonlyArray<string>
    readonly thinking?: string
    readonly audience?: "runtime" | "member"
    readonly denyPatterns?: ReadonlyArray<string>
    readonly extra?: Record<string, string>
  } = {}
): { files: Array<{ path: string; content: string }> } => {
  const list = (key: string, items: ReadonlyArray<string> | undefined) =>
    items === undefined ? "" : items.length === 0 ? `${key}: []\n` : `${key}:\n${items.map((i) => `  - ${JSON.stringify(i)}\n`).join("")}`
  const md =
    "---\n" +
    `name: ${name}\n` +
    "version: 1\n" +
    `description: ${JSON.stringify(options.description ?? `The ${name} agent.`)}\n` +
    list("tools", options.tools ?? ["read", "grep"]) +
    list("skills", options.skills) +
    (options.thinking === undefined ? "" : `thinking: ${options.thinking}\n`) +
    list("deny-command-patterns", options.denyPatterns) +
    `metadata:\n  audience: ${options.audience ?? "runtime"}\n` +
    "---\n" +
    (options.instructions ?? `You are ${name}. Read WORKSPACE.md first.\n`)
  return {
    files: [{ path: `${name}.md`, content: md }, ...Object.entries(options.extra ?? {}).map(([path, content]) => ({ path, content }))]
  }
}

/** Creates a custom agent through the API as the manager; fails the test unless it is 201. */
export const createAgent = async (api: Api, name: string, options: Parameters<typeof createAgentFiles>[1] = {}): Promise<JsonObject> => {
  const r = await api.request("POST", "/api/admin/agents", { token: api.manager.token, json: createAgentFiles(name, options) })
  if (r.status !== 201) throw new Error(`creating ${name}: ${r.status} ${r.text}`)
  return r.json<{ agent: JsonObject }>().agent
}

/** Saves a new version through the API as the manager; fails the test unless it is 200. */
export const saveAgent = async (api: Api, name: string, options: Parameters<typeof createAgentFiles>[1] = {}): Promise<JsonObject> => {
  const r = await api.request("PUT", `/api/admin/agents/${name}`, { token: api.manager.token, json: createAgentFiles(name, options) })
  if (r.status !== 200) throw new Error(`saving ${name}: ${r.status} ${r.text}`)
  return r.json<{ agent: JsonObject }>().agent
}

/** Creates a custom shared skill through the API as the manager; fails the test unless it is 201. */
export const createSkill = async (api: Api, name: string, content = `# ${name}\nDo it well.\n`): Promise<JsonObject> => {
  const r = await api.request("POST", "/api/admin/agent-skills", {
    token: api.manager.token,
    json: { name, description: `The ${name} skill.`, content }
  })
  if (r.status !== 201) throw new Error(`creating skill ${name}: ${r.status} ${r.text}`)
  return r.json<{ skill: JsonObject }>().skill
}

/** Tables whose rows change on every request (sessions, token use): not part of what a change is. */
const VOLATILE_TABLES = new Set(["admin.session", "admin.api_token"])
/** Columns a server process rewrites on its own while nothing is asked of it (a running eval run's heartbeat and lease). */
const VOLATILE_COLUMNS: ReadonlyMap<string, ReadonlyArray<string>> = new Map([
  ["admin.agent_eval_run", ["heartbeat_at", "lease_expires_at"]]
])

/**
 * Every row of every table in the `admin` and `runtime` schemas (sessions and API token use aside), as
 * one comparable string: proof that a refused request changed nothing, whichever store it aimed at.
 */
export const storeFingerprint = async (api: Api): Promise<string> => {
  const tables = await api.sql<{ name: string }>(`
    SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
    WHERE table_schema IN ('admin', 'runtime', 'memory') AND table_type = 'BASE TABLE' ORDER BY 1`)
  const parts: Array<string> = []
  for (const { name } of tables) {
    if (VOLATILE_TABLES.has(name)) continue
    const skip = VOLATILE_COLUMNS.get(name)
    const row = skip === undefined ? "t::text" : `(to_jsonb(t) - ARRAY[${skip.map((c) => `'${c}'`).join(", ")}]::text[])::text`
    const rows = await api.sql<{ digest: string | null }>(`SELECT md5(string_agg(${row}, ',' ORDER BY ${row})) AS digest FROM ${name} t`)
    parts.push(`${name}=${rows[0]?.digest ?? "empty"}`)
  }
  return parts.join(" ")
}

/** The provider `queueableBinding` binds to: never called (no worker runs where it is used; jobs stay queued). */
export const UNUSED_PROVIDER = "queued-only"

/**
 * Binds `agent` (for `project`; "" = the installation default) to UNUSED_PROVIDER, created on first use,
 * so job admission lets its jobs be queued (an agent with no binding is refused before queuing).
 */
export const queueableBinding = (agent: string, project = ""): Effect.Effect<void, never, ProviderStore | Bindings> =>
  Effect.gen(function* () {
    const providers = yield* ProviderStore
    yield* Effect.ignore(
      providers.create(
        {
          kind: "custom",
          id: UNUSED_PROVIDER,
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9",
          apiKey: "sk-unused",
          models: [{ id: "m", contextWindow: 128_000, maxTokens: 2048 }]
        },
        "test"
      )
    )
    yield* Effect.orDie((yield* Bindings).set(agent, project, { providerId: UNUSED_PROVIDER, modelId: "m" }, "test"))
  })

/** `queueableBinding` on this file's app. */
export const bindAgent = (api: Api, agent: string, project = ""): Promise<void> => api.run(queueableBinding(agent, project))
