/**
 * Portal security through app.handle: every non-GET portal route × {anonymous, reader, manager}
 * (a route missing from the table fails), cross-site posts, the session cookie, CSP and markup
 * without inline code, htmx served immutable, HTML error fragments for htmx.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { Access } from "../../src/access/Access.ts"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { SkillStore } from "../../src/agents/SkillStore.ts"
import { Bindings } from "../../src/providers/Bindings.ts"
import { McpServers } from "../../src/providers/McpServers.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { SqlClient } from "@effect/sql/SqlClient"
import { makeApp } from "../../src/http/app.ts"
import { makeTestRuntime, MANAGER, READER, signInTestUsers, type AppRuntime } from "./harness.ts"
import { queueableBinding } from "../support/api.ts"
import { createJobDirs } from "../support/jobChild.ts"
import { testJobRoot } from "../support/jobRoots.ts"
import { writeZip } from "../../src/agents/zip.ts"

// Many requests through a real database per test: generous on a 2-core CI machine.
setDefaultTimeout(60_000)

const BASE = "http://localhost"
const SAME_ORIGIN = { host: "localhost", origin: BASE, "sec-fetch-site": "same-origin" }

let runtime: AppRuntime
let app: ReturnType<typeof makeApp>
let jobId = ""
let tokenId = ""
const sessions: Record<string, { cookie: string; csrf: string }> = {}

const agentFile = (name: string, body = "You help.\n") => ({
  files: [{ path: `${name}.md`, content: `---\nname: ${name}\nversion: 1\ndescription: A test agent.\ntools:\n  - read\n---\n${body}` }]
})

const form = (fields: Record<string, string>) => new URLSearchParams(fields)

/** A package with one eval (docs/evals.md), for the Evaluations tab's run form. */
const withEvals = (p: { files: Array<{ path: string; content: string }> }) => ({
  files: [
    ...p.files,
    { path: "evals/e.md", content: "---\ndescription: d\nfixture: f\nexpect:\n  contains:\n    - { text: x }\n---\nDo.\n" },
    { path: "evals/fixtures/f/a.txt", content: "a\n" }
  ]
})

const editorFields = (name: string, mode: "create" | "edit") =>
  form({
    _mode: mode,
    name,
    version: "1",
    description: "Matrix agent.",
    audience: "runtime",
    toolsMode: "selected",
    tools: "read",
    instructions: "Help.\n"
  })

const send = (
  method: string,
  path: string,
  init: { session?: string; csrf?: boolean; body?: URLSearchParams | FormData; headers?: Record<string, string> } = {}
) => {
  const s = init.session === undefined ? undefined : sessions[init.session]
  const headers: Record<string, string> = {
    ...SAME_ORIGIN,
    ...(s === undefined ? {} : { cookie: `__Host-kintsugi-session=${s.cookie}` }),
    ...init.headers
  }
  let body = init.body
  if (s !== undefined && init.csrf !== false) {
    if (body instanceof URLSearchParams) body.set("_csrf", s.csrf)
    else if (body instanceof FormData) body.set("_csrf", s.csrf)
    else if (body === undefined) body = form({ _csrf: s.csrf })
  }
  return app.handle(new Request(`${BASE}${path}`, { method, headers, body: body ?? null, redirect: "manual" }))
}

beforeAll(async () => {
  runtime = await makeTestRuntime()
  app = makeApp({ runtime, log: (line) => console.error(line) })
  Object.assign(sessions, await signInTestUsers(runtime))
  await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.create(withEvals(agentFile("matrix-agent")), "setup")))
  await runtime.runPromise(
    Effect.flatMap(AgentStore, (s) => s.save("matrix-agent", withEvals(agentFile("matrix-agent", "Help more.\n")), "setup"))
  )
  await runtime.runPromise(Effect.flatMap(SkillStore, (s) => s.create({ name: "matrix-skill", content: "Be brief." }, "setup")))
  const job = await runtime.runPromise(
    Effect.flatMap(JobStore, (s) =>
      s.enqueue(
        {
          agent: "codebase-inventory",
          task: "t",
          workspace: { root: "/tmp", readOnly: ["/tmp"], outDir: "/tmp" },
          limits: { timeoutSec: 60 }
        },
        "setup"
      )
    )
  )
  jobId = job.id
  // Bound, so the run form queues its job (no worker runs here: the provider is never called).
  await runtime.runPromise(queueableBinding("codebase-inventory"))
  tokenId = (await runtime.runPromise(Effect.flatMap(Access, (a) => a.createToken(MANAGER.username, "matrix-token")))).view.id
  await runtime.runPromise(Effect.flatMap(Access, (a) => a.addUser("matrix-user", MANAGER.password, ["agents.manage"])))
  // A project with one learned note, for the memory page's review, settings and reset.
  await runtime.runPromise(Effect.orDie(Effect.flatMap(Projects, (p) => p.create({ id: "matrix-proj", name: "Matrix" }))))
  await runtime.runPromise(
    Effect.flatMap(
      SqlClient,
      (
        sql
      ) => sql`INSERT INTO memory.note (id, project_id, kind, title, body, trust, created_agent, updated_agent, created_at, updated_at, trust_at)
      VALUES (${MATRIX_NOTE}, 'matrix-proj', 'fact', 'T', 'B', 'learned', 'a', 'a', now(), now(), now())`
    )
  )
}, 120_000)

afterAll(async () => {
  await runtime?.dispose()
})

const MATRIX_NOTE = "00000000-0000-4000-8000-0000000000aa"

type Guard = "public" | "read" | "agents.manage" | "providers.manage" | "admin"

const providerFields = (extra: Record<string, string> = {}) =>
  form({
    kind: "custom",
    id: "matrix-gw",
    api: "openai-completions",
    baseUrl: "http://127.0.0.1:9/v1",
    modelKey: "a",
    "m.a.id": "m1",
    "m.a.contextWindow": "8000",
    "m.a.maxTokens": "1000",
    "m.a.thinking": "off",
    ...extra
  })
const runFields = () => {
  const dirs = createJobDirs()
  return form({ task: "Look.", root: dirs.root, readOnly: dirs.src, outDir: dirs.out, timeoutSec: "60" })
}

/** Every non-GET portal route, in the order the manager runs them, with a body that succeeds. */
const ROUTES: ReadonlyArray<{
  readonly route: string
  readonly path: string
  readonly guard: Guard
  readonly body: () => URLSearchParams | FormData
  /** A reader's status when it is not the guard's (read → 200, else 403). */
  readonly reader?: number
  /** The manager's status when it is not a 303 redirect. */
  readonly ok?: number
  /** For a refusal the manager gets (`ok` 4xx): what its page must say. */
  readonly refusal?: string
}> = [
  {
    route: "POST /sign-in",
    path: "/sign-in",
    guard: "public",
    body: () => form({ username: MANAGER.username, password: MANAGER.password })
  },
  { route: "POST /agents/-/preview", path: "/agents/-/preview", guard: "read", body: () => editorFields("matrix-agent", "edit") },
  { route: "POST /agents", path: "/agents", guard: "agents.manage", body: () => editorFields("matrix-new", "create") },
  { route: "POST /agents/:name", path: "/agents/matrix-agent", guard: "agents.manage", body: () => editorFields("matrix-agent", "edit") },
  {
    route: "POST /agents/:name/enabled",
    path: "/agents/matrix-agent/enabled",
    guard: "agents.manage",
    body: () => form({ enabled: "false" })
  },
  {
    route: "POST /agents/:name/copy",
    path: "/agents/matrix-agent/copy",
    guard: "agents.manage",
    body: () => form({ newName: "matrix-copy" })
  },
  {
    route: "POST /agents/:name/versions/:version/restore",
    path: "/agents/matrix-agent/versions/1/restore",
    guard: "agents.manage",
    body: () => form({})
  },
  {
    route: "POST /agents/-/import",
    path: "/agents/-/import",
    guard: "agents.manage",
    body: () => {
      const f = new FormData()
      f.append("files", new File([agentFile("matrix-imported").files[0]!.content], "matrix-imported.md", { type: "text/markdown" }))
      return f
    }
  },
  {
    route: "POST /agent-skills",
    path: "/agent-skills",
    guard: "agents.manage",
    body: () => form({ name: "matrix-skill-2", description: "", content: "Two." })
  },
  {
    route: "POST /agent-skills/:name",
    path: "/agent-skills/matrix-skill",
    guard: "agents.manage",
    body: () => form({ description: "edited", content: "Be briefer." })
  },
  {
    route: "POST /agent-skills/:name/versions/:version/restore",
    path: "/agent-skills/matrix-skill/versions/1/restore",
    guard: "agents.manage",
    body: () => form({})
  },
  { route: "POST /agent-skills/:name/delete", path: "/agent-skills/matrix-skill/delete", guard: "agents.manage", body: () => form({}) },
  { route: "POST /providers", path: "/providers", guard: "providers.manage", body: () => providerFields({ apiKey: "sk-matrix" }) },
  { route: "POST /providers/:id", path: "/providers/matrix-gw", guard: "providers.manage", body: () => providerFields() },
  {
    route: "POST /agents/:name/binding",
    path: "/agents/matrix-agent/binding",
    guard: "providers.manage",
    body: () => form({ project: "", target: "matrix-gw/m1", thinking: "off" })
  },
  // While matrix-agent is bound: its v2 has evals (the run's jobs stay queued: no worker here).
  { route: "POST /agents/:name/evals", path: "/agents/matrix-agent/evals", guard: "agents.manage", body: () => form({ version: "2" }) },
  {
    route: "POST /agents/:name/binding/delete",
    path: "/agents/matrix-agent/binding/delete",
    guard: "providers.manage",
    body: () => form({ project: "" })
  },
  { route: "POST /providers/:id/test", path: "/providers/matrix-gw/test", guard: "providers.manage", body: () => form({}), ok: 200 },
  { route: "POST /providers/:id/delete", path: "/providers/matrix-gw/delete", guard: "providers.manage", body: () => form({}) },
  {
    route: "POST /mcp-servers",
    path: "/mcp-servers",
    guard: "providers.manage",
    body: () => form({ name: "matrix-mcp", url: "http://127.0.0.1:9/mcp", timeoutSec: "30", allowPrivateNetwork: "on" })
  },
  {
    route: "POST /mcp-servers/:name",
    path: "/mcp-servers/matrix-mcp",
    guard: "providers.manage",
    body: () => form({ url: "http://127.0.0.1:9/mcp2", timeoutSec: "20", allowPrivateNetwork: "on" })
  },
  {
    route: "POST /mcp-servers/:name/allowed-tools",
    path: "/mcp-servers/matrix-mcp/allowed-tools",
    guard: "providers.manage",
    body: () => form({ tool: "write_page", allowed: "1" })
  },
  { route: "POST /mcp-servers/:name/delete", path: "/mcp-servers/matrix-mcp/delete", guard: "providers.manage", body: () => form({}) },
  { route: "POST /projects", path: "/projects", guard: "agents.manage", body: () => form({ id: "matrix-project", name: "Matrix" }) },
  { route: "POST /projects/:id", path: "/projects/matrix-proj", guard: "agents.manage", body: () => form({ name: "Matrix" }) },
  {
    route: "POST /web-search",
    path: "/web-search",
    guard: "providers.manage",
    body: () => form({ kind: "searxng", url: "http://127.0.0.1:9" })
  },
  // Sends one query with the stored settings and renders the outcome (nothing listens on port 9).
  { route: "POST /web-search/test", path: "/web-search/test", guard: "providers.manage", body: () => form({}), ok: 200 },
  { route: "POST /web-search/delete", path: "/web-search/delete", guard: "providers.manage", body: () => form({}) },
  {
    route: "POST /projects/:id/web",
    path: "/projects/matrix-proj/web",
    guard: "agents.manage",
    body: () => form({ searchAgents: "matrix-agent", fetch: "1", dailySearches: "5", dailyFetches: "5", jobSearches: "1", jobFetches: "1" })
  },
  { route: "POST /agents/:name/run", path: "/agents/codebase-inventory/run", guard: "agents.manage", body: runFields },
  {
    route: "POST /workspaces",
    path: "/workspaces",
    guard: "agents.manage",
    body: () => {
      const f = new FormData()
      for (const [k, v] of Object.entries({ root: testJobRoot(), name: "matrix-ws", source: "archive", url: "" })) f.append(k, v)
      f.append("archive", new File([writeZip([{ path: "a.txt", content: "a\n" }])], "matrix.zip", { type: "application/zip" }))
      return f
    }
  },
  {
    route: "POST /jobs/:id/abort",
    get path() {
      return `/jobs/${jobId}/abort`
    },
    guard: "agents.manage",
    body: () => form({})
  },
  // The matrix's job has no transcript (and may not be finished): the manager is answered 409, nothing queued.
  {
    route: "POST /jobs/:id/continue",
    get path() {
      return `/jobs/${jobId}/continue`
    },
    guard: "agents.manage",
    body: () => form({ task: "Go on." }),
    ok: 409,
    refusal: "cannot be continued"
  },
  { route: "POST /agents/:name/delete", path: "/agents/matrix-agent/delete", guard: "agents.manage", body: () => form({}) },
  // The new token is rendered once (200), never redirected to; a reader may make their own.
  {
    route: "POST /account/tokens",
    path: "/account/tokens",
    guard: "read",
    body: () => form({ name: "matrix", expiresInDays: "7" }),
    ok: 200
  },
  {
    route: "POST /account/tokens/:id/revoke",
    get path() {
      return `/account/tokens/${tokenId}/revoke`
    },
    guard: "read",
    // The manager's token: not the reader's to revoke (the same 404 as an unknown id).
    reader: 404,
    body: () => form({})
  },
  // Your own password (the current one proves it): a reader changes theirs too.
  {
    route: "POST /account/password",
    path: "/account/password",
    guard: "read",
    reader: 303,
    body: () => form({ currentPassword: MANAGER.password, newPassword: MANAGER.password, confirmPassword: MANAGER.password })
  },
  {
    route: "POST /users",
    path: "/users",
    guard: "admin",
    body: () => form({ username: "matrix-new-user", password: MANAGER.password, permissions: "agents.manage" })
  },
  {
    route: "POST /users/:name/permissions",
    path: "/users/matrix-user/permissions",
    guard: "admin",
    body: () => form({ permissions: "agents.manage" })
  },
  {
    route: "POST /users/:name/password",
    path: "/users/matrix-user/password",
    guard: "admin",
    body: () => form({ password: "a matrix reset password" })
  },
  {
    route: "POST /users/:name/permissions/:permission/remove",
    path: "/users/matrix-user/permissions/agents.manage/remove",
    guard: "admin",
    body: () => form({})
  },
  { route: "POST /users/:name/disabled", path: "/users/matrix-user/disabled", guard: "admin", body: () => form({ disabled: "true" }) },
  {
    route: "POST /projects/:id/memory/notes/:noteId/review",
    path: `/projects/matrix-proj/memory/notes/${MATRIX_NOTE}/review`,
    guard: "agents.manage",
    body: () => form({ decision: "reviewed" })
  },
  {
    route: "POST /projects/:id/memory/settings",
    path: "/projects/matrix-proj/memory/settings",
    guard: "agents.manage",
    body: () => form({ enabled: "on", learnedDays: "30" })
  },
  {
    route: "POST /projects/:id/memory/reset",
    path: "/projects/matrix-proj/memory/reset",
    guard: "agents.manage",
    body: () => form({ confirm: "matrix-proj" })
  },
  { route: "POST /sign-out", path: "/sign-out", guard: "read", body: () => form({}) }
]

describe("portal routes", () => {
  test("every non-GET portal route is classified", () => {
    const portal = app.routes
      .filter((r) => !["GET", "HEAD", "OPTIONS"].includes(r.method) && !r.path.startsWith("/api/") && r.path !== "/healthz")
      .map((r) => `${r.method} ${r.path}`)
    expect(portal.length).toBeGreaterThan(0)
    for (const route of portal) expect(ROUTES.map((r) => r.route)).toContain(route)
  })

  test("anonymous: 401 on every route that needs a session (sign-in is public)", async () => {
    for (const r of ROUTES) {
      const res = await send("POST", r.path, { body: r.body() })
      expect({ route: r.route, status: res.status }).toEqual({ route: r.route, status: r.guard === "public" ? 303 : 401 })
      expect(res.headers.get("content-type")).toStartWith("text/html")
    }
  })

  test("a reader without agents.manage: 403 on every change, allowed to read", async () => {
    for (const r of ROUTES.filter((x) => x.guard !== "public" && x.route !== "POST /sign-out")) {
      const res = await send("POST", r.path, { session: "reader", body: r.body() })
      expect({ route: r.route, status: res.status }).toEqual({ route: r.route, status: r.reader ?? (r.guard === "read" ? 200 : 403) })
    }
  })

  test("the manager: every change succeeds (a redirect after it, or the fragment), or is refused naming why", async () => {
    for (const r of ROUTES.filter((x) => x.guard !== "public")) {
      const res = await send("POST", r.path, { session: "manager", body: r.body() })
      const text = res.status >= 400 ? await res.text() : ""
      expect({ route: r.route, status: res.status, text: r.refusal === undefined ? text : text.includes(r.refusal) }).toEqual({
        route: r.route,
        status: r.ok ?? (r.route.endsWith("preview") ? 200 : 303),
        text: r.refusal === undefined ? "" : true
      })
    }
    const names = (await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.catalog))).filter((a) => !a.builtin).map((a) => a.name)
    expect(names.sort()).toEqual(["matrix-copy", "matrix-imported", "matrix-new"])
    const skills = (await runtime.runPromise(Effect.flatMap(SkillStore, (s) => s.list))).filter((x) => !x.builtin).map((x) => x.name)
    expect(skills).toEqual(["matrix-skill-2"])
    expect((await send("GET", "/agents", { session: "manager" })).status).toBe(303)
  })
})

const signIn = async (key: string, user: { username: string; password: string }) => {
  const s = await runtime.runPromise(Effect.flatMap(Access, (a) => a.signIn(user.username, user.password)))
  sessions[key] = { cookie: s.token, csrf: s.principal.csrfToken ?? "" }
}

describe("portal security", () => {
  beforeAll(async () => {
    await signIn("admin", MANAGER)
    await signIn("viewer", READER)
    await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.create(agentFile("guarded"), "setup")))
  })

  const stillThere = () =>
    runtime.runPromise(Effect.map(Effect.either(Effect.flatMap(AgentStore, (s) => s.get("guarded"))), (e) => e._tag === "Right"))

  test("a cross-site form POST without the token is refused (403), whatever else it carries", async () => {
    const crossSite: Array<Record<string, string>> = [
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
      { origin: "https://evil.example" },
      { origin: "http://localhost:9999", "sec-fetch-site": "same-site" }
    ]
    for (const headers of crossSite) {
      for (const session of [undefined, "admin"]) {
        const res = await send("POST", "/agents/guarded/delete", {
          ...(session === undefined ? {} : { session }),
          csrf: false,
          headers,
          body: form({})
        })
        expect(res.status).toBe(403)
        expect(await res.text()).toContain("Not allowed")
      }
    }
    // Even with the right token, a foreign Origin is refused; and the right origin without a token too.
    expect(
      (await send("POST", "/agents/guarded/delete", { session: "admin", headers: { origin: "https://evil.example" }, body: form({}) }))
        .status
    ).toBe(403)
    expect((await send("POST", "/agents/guarded/delete", { session: "admin", csrf: false, body: form({}) })).status).toBe(403)
    expect((await send("POST", "/agents/guarded/delete", { session: "admin", csrf: false, body: form({ _csrf: "wrong" }) })).status).toBe(
      403
    )
    expect(await stillThere()).toBe(true)
  })

  test("the CSRF token also works as the htmx header", async () => {
    const res = await send("POST", "/agents/guarded/enabled", {
      session: "admin",
      csrf: false,
      body: form({ enabled: "false" }),
      headers: { "x-csrf-token": sessions["admin"]?.csrf ?? "", "hx-request": "true" }
    })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('id="enabled-toggle"')
  })

  test("signing in sets a __Host- cookie: Secure, HttpOnly, SameSite=Lax; a foreign sign-in form is refused", async () => {
    const res = await send("POST", "/sign-in", {
      body: form({ username: MANAGER.username, password: MANAGER.password, next: "//evil.example/x" })
    })
    expect(res.status).toBe(303)
    expect(res.headers.get("location")).toBe("/home")
    const cookie = res.headers.get("set-cookie") ?? ""
    expect(cookie).toMatch(/^__Host-kintsugi-session=[^;]+; Path=\/; Secure; HttpOnly; SameSite=Lax/)
    const wrong = await send("POST", "/sign-in", { body: form({ username: MANAGER.username, password: "wrong password!" }) })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain("unknown user or wrong password")
    const foreign = await send("POST", "/sign-in", {
      headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
      body: form({ username: MANAGER.username, password: MANAGER.password })
    })
    expect(foreign.status).toBe(403)
    expect(foreign.headers.get("set-cookie")).toBeNull()
  })

  test("pages need a session: a visitor is sent to sign in and back", async () => {
    const res = await send("GET", "/agents/guarded/versions?x=1")
    expect(res.status).toBe(303)
    expect(res.headers.get("location")).toBe(`/sign-in?next=${encodeURIComponent("/agents/guarded/versions?x=1")}`)
    const htmx = await send("GET", "/agents", { headers: { "hx-request": "true", "hx-current-url": `${BASE}/agents?q=x` } })
    expect(htmx.headers.get("hx-redirect")).toBe(`/sign-in?next=${encodeURIComponent("/agents?q=x")}`)
    expect((await send("GET", "/", {})).headers.get("location")).toBe("/sign-in")
    expect((await send("GET", "/", { session: "viewer" })).headers.get("location")).toBe("/home")
  })

  test("every page: a CSP without unsafe-inline or unsafe-eval, and no inline script, style or event handler", async () => {
    const pages = [
      "/agents",
      "/agents/-/new",
      "/agents/-/import",
      "/agents/guarded",
      "/agents/guarded/versions",
      "/agents/guarded/versions/1",
      "/agents/guarded/diff?from=1&to=1",
      "/agents/guarded/definition",
      "/agents/codebase-inventory",
      "/agents/codebase-inventory/definition",
      "/agent-skills",
      "/agent-skills/-/new",
      "/agent-skills/cite-evidence",
      "/agents/nope",
      "/nothing-here",
      "/providers",
      "/providers/-/new",
      "/providers/-/builtin",
      "/mcp-servers",
      "/mcp-servers/-/new",
      "/jobs",
      "/agents/guarded/binding",
      "/agents/guarded/run",
      "/account",
      "/users",
      "/web-search",
      "/projects/matrix-proj/web",
      "/home",
      "/workspaces",
      "/workspaces/-/new"
    ]
    for (const path of pages) {
      const res = await send("GET", path, { session: "admin" })
      expect({ path, ok: res.status < 400 || path === "/agents/nope" || path === "/nothing-here" }).toEqual({ path, ok: true })
      const csp = res.headers.get("content-security-policy") ?? ""
      expect(csp).toContain("script-src 'self'")
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/)
      const body = await res.text()
      expect(body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/)
      expect(body).not.toMatch(/\sstyle=|\son[a-z]+=|<style/i)
      expect(body).toContain("{&quot;allowEval&quot;:false,&quot;allowScriptTags&quot;:false,&quot;selfRequestsOnly&quot;:true")
    }
  })

  test("htmx is served from node_modules at its versioned URL, cached as immutable", async () => {
    const res = await send("GET", "/vendor/htmx-2.0.11.min.js")
    expect(res.status).toBe(200)
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect(res.headers.get("content-type")).toStartWith("text/javascript")
    const file = readFileSync(Bun.fileURLToPath(import.meta.resolve("htmx.org/dist/htmx.min.js")))
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(file))
  })

  test("htmx requests get HTML error fragments (retargeted to the toast region), never JSON", async () => {
    const res = await send("POST", "/agents/nope/enabled", {
      session: "admin",
      body: form({ enabled: "true" }),
      headers: { "hx-request": "true" }
    })
    expect(res.status).toBe(404)
    expect(res.headers.get("content-type")).toStartWith("text/html")
    expect(res.headers.get("hx-retarget")).toBe("#flash")
    const text = await res.text()
    expect(text).toContain("toast")
    expect(text).toContain("no agent &quot;nope&quot;")
    expect(text).not.toContain("<html")
    const page = await send("GET", "/agents/nope", { session: "admin" })
    expect(page.status).toBe(404)
    expect(await page.text()).toContain("<html")
    expect((await send("GET", "/api/nothing", { session: "admin" })).headers.get("content-type")).toStartWith("application/json")
    const other = await send("GET", "/nothing-here", { session: "admin" })
    expect(other.status).toBe(404)
    expect(await other.text()).toContain("There is no page at this address.")
  })

  test("the editor offers the registered MCP servers' grants and the thinking levels of the bound model", async () => {
    const model = { id: "m1", contextWindow: 8000, maxTokens: 1000, reasoning: true, thinkingLevels: ["off", "low", "high"] }
    await runtime.runPromise(
      Effect.flatMap(ProviderStore, (p) =>
        p.create(
          { kind: "custom", id: "gw", api: "openai-completions", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", models: [model] },
          "setup"
        )
      )
    )
    await runtime.runPromise(Effect.flatMap(Bindings, (b) => b.set("guarded", "", { providerId: "gw", modelId: "m1" }, "setup")))
    await runtime.runPromise(
      Effect.flatMap(McpServers, (m) =>
        m.put("kb", { url: "http://127.0.0.1:9/mcp", allowPrivateNetwork: true, allowedTools: ["search"] }, "setup")
      )
    )
    const body = await (await send("GET", "/agents/guarded", { session: "admin" })).text()
    expect(body).toContain('value="mcp__kb__*"')
    expect(body).toContain('value="mcp__kb__search"')
    const thinking = /<select id="f-thinking"[\s\S]*?<\/select>/.exec(body)?.[0] ?? ""
    expect([...thinking.matchAll(/<option value="([a-z]*)"/g)].map((m) => m[1])).toEqual(["", "off", "low", "high"])
    expect(body).toContain("gw / m1")
    expect(await (await send("GET", "/agents?q=guarded", { session: "admin" })).text()).toContain("gw / m1")
  })

  test("deleting a shared skill in use is refused, naming the agents", async () => {
    await runtime.runPromise(Effect.flatMap(SkillStore, (s) => s.create({ name: "house-style", content: "Short." }, "setup")))
    const user = {
      files: [{ path: "styled.md", content: "---\nname: styled\nversion: 1\ndescription: Uses it.\nskills:\n  - house-style\n---\nHi.\n" }]
    }
    await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.create(user, "setup")))
    const res = await send("POST", "/agent-skills/house-style/delete", {
      session: "admin",
      body: form({}),
      headers: { "hx-request": "true" }
    })
    expect(res.status).toBe(409)
    const text = await res.text()
    expect(text).toContain("is used by styled")
    expect(text).toContain('href="/agents/styled"')
  })
})
