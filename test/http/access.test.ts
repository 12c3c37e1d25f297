/**
 * The access matrix of the JSON API: every API route of the app is classified here (a route that is
 * not fails the first test; portal pages have their own matrix in test/portal/routes.test.ts), and each
 * is called as anonymous, as a user without permission, as a user with only the other permission, and
 * as a manager.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { MemoryStore } from "../../src/worker/memory/MemoryStore.ts"
import { createJobDirs, type JobDirs } from "../support/jobChild.ts"
import {
  bindAgent,
  createAgent,
  createAgentFiles,
  createSkill,
  PASSWORD,
  saveAgent,
  type Session,
  storeFingerprint,
  useApi
} from "../support/api.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

/**
 * `admin`: every admin permission; `session`: any signed-in session, never an API token; `metrics.read`:
 * that permission or an admin (loopback clients need none: test/http/observability.test.ts);
 * `transcripts.read`: that permission or an admin; `self`:
 * any principal, changing only what is its own (so a reader's call changes the store too).
 */
type Guard =
  | "public"
  | "read"
  | "self"
  | "agents.manage"
  | "providers.manage"
  | "metrics.read"
  | "transcripts.read"
  | "admin"
  | "session"
  | "fallback"

interface Sample {
  readonly path: string
  readonly json?: unknown
}

interface RouteCase {
  /** `METHOD /elysia/path/:param`, as `app.routes` lists it. */
  readonly route: string
  readonly guard: Guard
  /** Prepares fresh state for one call and returns the concrete request. `n` is unique per call. */
  readonly sample: (n: string) => Promise<Sample>
  /**
   * The exact status of a call that passes the guard: the manager's (and a user holding just the
   * guard's permission); for `read` and `public` routes, every caller's.
   */
  readonly ok: number
  /** False when a successful call changes only volatile tables (tokens, sessions): the store fingerprint stays. */
  readonly changes?: false
}

let counter = 0
const unique = (prefix: string) => `${prefix}-${++counter}`

const asManager = async (method: string, path: string, json?: unknown) => {
  const r = await api.request(method, path, { token: api.manager.token, json })
  if (r.status >= 300) throw new Error(`setup ${method} ${path}: ${r.status} ${r.text}`)
  return r.json()
}
const createProvider = (id: string) =>
  asManager("POST", "/api/admin/providers", { kind: "builtin", id, builtin: "anthropic", apiKey: "sk-test-key" })
const bindingBody = (providerId: string) => ({ providerId, modelId: "claude-sonnet-4-5", thinking: "high" })
/** An agent with one eval (docs/evals.md), bound to a provider: its evals can be started. */
const EVAL_FILES = {
  "evals/e.md": "---\ndescription: d\nfixture: f\nexpect:\n  contains:\n    - { text: x }\n---\nDo.\n",
  "evals/fixtures/f/a.txt": "a\n"
}
const createEvalAgent = async (n: string) => {
  await createAgent(api, n, { extra: EVAL_FILES })
  await createProvider(n)
  await asManager("PUT", `/api/admin/agents/${n}/bindings`, bindingBody(n))
}
const createProject = (id: string) => asManager("POST", "/api/projects", { id, name: `Project ${id}` })
// A real workspace inside the test job root: the API refuses missing directories and paths outside the roots.
let dirs: JobDirs | undefined
const jobBody = (agent: string) => {
  dirs ??= createJobDirs()
  return { agent, task: "Survey it.", workspace: { root: dirs.root, readOnly: [dirs.src], outDir: dirs.out }, limits: { timeoutSec: 60 } }
}
// A public address literal: the URL policy needs no DNS lookup for it.
const mcpBody = { url: "https://93.184.215.14/mcp", headers: { authorization: "Bearer canary" } }
const webSearchBody = { kind: "searxng", url: "http://127.0.0.1:9" }
/** Creates user `n` with a token and returns the token's id. */
const tokenIdOf = async (n: string): Promise<string> => {
  await api.createUser(n, [])
  return (
    await api.sql<{ id: string }>(`SELECT t.id FROM admin.api_token t JOIN admin.app_user u ON u.id = t.user_id WHERE u.username = '${n}'`)
  )[0]!.id
}
/** A project with one learned note (saved as an agent would); returns the note's id. */
const createNote = async (project: string) => {
  await createProject(project)
  const { note } = await api.run(
    Effect.flatMap(MemoryStore, (m) =>
      m.save(
        project,
        { _tag: "Agent", jobId: "00000000-0000-4000-8000-000000000001", agentId: "a" },
        { kind: "fact", title: "T", body: "B", paths: [] }
      )
    )
  )
  return note.id
}
const createJob = async (n: string) => {
  await bindAgent(api, n)
  return (await asManager("POST", "/api/jobs", jobBody(n))).job.id as string
}

/** Every non-GET route of the JSON API (portal pages: test/portal/routes.test.ts). */
const NON_GET: ReadonlyArray<RouteCase> = [
  {
    route: "POST /api/session",
    guard: "public",
    sample: async () => ({ path: "/api/session", json: { username: "reader", password: PASSWORD } }),
    ok: 200
  },
  { route: "DELETE /api/session", guard: "read", sample: async () => ({ path: "/api/session" }), ok: 204 },
  // A dry run that saves nothing: reading rights suffice.
  {
    route: "POST /api/admin/agents/preview",
    guard: "read",
    sample: async (n) => ({ path: "/api/admin/agents/preview", json: createAgentFiles(n) }),
    ok: 200
  },
  {
    route: "POST /api/admin/agents/import",
    guard: "agents.manage",
    sample: async (n) => ({ path: "/api/admin/agents/import", json: createAgentFiles(n) }),
    ok: 201
  },
  {
    route: "POST /api/admin/agents",
    guard: "agents.manage",
    sample: async (n) => ({ path: "/api/admin/agents", json: createAgentFiles(n) }),
    ok: 201
  },
  {
    route: "PUT /api/admin/agents/:name",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/admin/agents/${n}`, json: createAgentFiles(n, { instructions: "Changed.\n" }) }
    },
    ok: 200
  },
  {
    route: "PATCH /api/admin/agents/:name",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/admin/agents/${n}`, json: { enabled: false } }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/agents/:name",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/admin/agents/${n}` }
    },
    ok: 204
  },
  {
    route: "POST /api/admin/agents/:name/copy",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/admin/agents/${n}/copy`, json: { name: `${n}-copy` } }
    },
    ok: 201
  },
  {
    route: "POST /api/admin/agents/:name/versions/:version/restore",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await saveAgent(api, n, { instructions: "Version two.\n" })
      return { path: `/api/admin/agents/${n}/versions/1/restore` }
    },
    ok: 200
  },
  {
    route: "POST /api/admin/agents/:name/versions/:version/evals",
    guard: "agents.manage",
    sample: async (n) => {
      await createEvalAgent(n)
      return { path: `/api/admin/agents/${n}/versions/1/evals`, json: {} }
    },
    ok: 202
  },
  {
    route: "POST /api/admin/agent-skills",
    guard: "agents.manage",
    sample: async (n) => ({ path: "/api/admin/agent-skills", json: { name: n, content: "Be brief.\n" } }),
    ok: 201
  },
  {
    route: "PUT /api/admin/agent-skills/:name",
    guard: "agents.manage",
    sample: async (n) => {
      await createSkill(api, n)
      return { path: `/api/admin/agent-skills/${n}`, json: { content: "Be briefer.\n" } }
    },
    ok: 200
  },
  {
    route: "POST /api/admin/agent-skills/:name/versions/:version/restore",
    guard: "agents.manage",
    sample: async (n) => {
      await createSkill(api, n)
      await api.request("PUT", `/api/admin/agent-skills/${n}`, { token: api.manager.token, json: { content: "Version two.\n" } })
      return { path: `/api/admin/agent-skills/${n}/versions/1/restore` }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/agent-skills/:name",
    guard: "agents.manage",
    sample: async (n) => {
      await createSkill(api, n)
      return { path: `/api/admin/agent-skills/${n}` }
    },
    ok: 204
  },
  {
    route: "POST /api/admin/providers",
    guard: "providers.manage",
    sample: async (n) => ({ path: "/api/admin/providers", json: { kind: "builtin", id: n, builtin: "anthropic", apiKey: "sk-test-key" } }),
    ok: 201
  },
  {
    route: "PUT /api/admin/providers/:id",
    guard: "providers.manage",
    sample: async (n) => {
      await createProvider(n)
      return { path: `/api/admin/providers/${n}`, json: { kind: "builtin", id: n, builtin: "anthropic", apiKey: "sk-other-key" } }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/providers/:id",
    guard: "providers.manage",
    sample: async (n) => {
      await createProvider(n)
      return { path: `/api/admin/providers/${n}` }
    },
    ok: 204
  },
  {
    route: "PUT /api/admin/agents/:name/bindings",
    guard: "providers.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await createProvider(n)
      return { path: `/api/admin/agents/${n}/bindings`, json: bindingBody(n) }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/agents/:name/bindings",
    guard: "providers.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await createProvider(n)
      await asManager("PUT", `/api/admin/agents/${n}/bindings`, bindingBody(n))
      return { path: `/api/admin/agents/${n}/bindings` }
    },
    ok: 204
  },
  {
    route: "PUT /api/admin/agents/:name/bindings/:project",
    guard: "providers.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await createProvider(n)
      await createProject(n)
      return { path: `/api/admin/agents/${n}/bindings/${n}`, json: bindingBody(n) }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/agents/:name/bindings/:project",
    guard: "providers.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await createProvider(n)
      await createProject(n)
      await asManager("PUT", `/api/admin/agents/${n}/bindings/${n}`, bindingBody(n))
      return { path: `/api/admin/agents/${n}/bindings/${n}` }
    },
    ok: 204
  },
  {
    route: "PUT /api/admin/mcp-servers/:name",
    guard: "providers.manage",
    sample: async (n) => ({ path: `/api/admin/mcp-servers/${n}`, json: mcpBody }),
    ok: 200
  },
  {
    route: "POST /api/admin/mcp-servers/:name/allowed-tools",
    guard: "providers.manage",
    sample: async (n) => {
      await asManager("PUT", `/api/admin/mcp-servers/${n}`, mcpBody)
      return { path: `/api/admin/mcp-servers/${n}/allowed-tools`, json: { tool: "write_page", allowed: true } }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/mcp-servers/:name",
    guard: "providers.manage",
    sample: async (n) => {
      await asManager("PUT", `/api/admin/mcp-servers/${n}`, mcpBody)
      return { path: `/api/admin/mcp-servers/${n}` }
    },
    ok: 204
  },
  {
    route: "POST /api/projects",
    guard: "agents.manage",
    sample: async (n) => ({ path: "/api/projects", json: { id: n, name: `Project ${n}` } }),
    ok: 201
  },
  {
    route: "PUT /api/projects/:id",
    guard: "agents.manage",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}`, json: { name: `Renamed ${n}` } }
    },
    ok: 200
  },
  {
    route: "PUT /api/admin/web-search",
    guard: "providers.manage",
    sample: async () => ({ path: "/api/admin/web-search", json: webSearchBody }),
    ok: 200
  },
  {
    route: "DELETE /api/admin/web-search",
    guard: "providers.manage",
    sample: async () => {
      await asManager("PUT", "/api/admin/web-search", webSearchBody)
      return { path: "/api/admin/web-search" }
    },
    ok: 204
  },
  {
    // Sends a query with the stored key: an admin's action. Nothing listens on port 9: ok false, still 200.
    route: "POST /api/admin/web-search/test",
    guard: "providers.manage",
    sample: async () => {
      await asManager("PUT", "/api/admin/web-search", webSearchBody)
      return { path: "/api/admin/web-search/test", json: {} }
    },
    ok: 200,
    changes: false
  },
  {
    route: "PUT /api/projects/:id/web",
    guard: "agents.manage",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}/web`, json: { searchAgents: [n], fetch: true } }
    },
    ok: 200
  },
  {
    route: "PUT /api/projects/:id/memory",
    guard: "agents.manage",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}/memory`, json: { enabled: true, retention: { learnedDays: 30 } } }
    },
    ok: 200
  },
  {
    route: "POST /api/projects/:id/memory/notes/:noteId/review",
    guard: "agents.manage",
    sample: async (n) => ({ path: `/api/projects/${n}/memory/notes/${await createNote(n)}/review`, json: { decision: "reviewed" } }),
    ok: 200
  },
  {
    route: "POST /api/projects/:id/memory/reset",
    guard: "agents.manage",
    sample: async (n) => {
      await createNote(n)
      return { path: `/api/projects/${n}/memory/reset`, json: { confirm: n } }
    },
    ok: 200
  },
  // Starting a job spends money and names server directories: agents.manage (it is only queued here; no worker runs).
  {
    route: "POST /api/jobs",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      await bindAgent(api, n)
      return { path: "/api/jobs", json: jobBody(n) }
    },
    ok: 201
  },
  {
    route: "POST /api/jobs/:id/abort",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}/abort` }
    },
    ok: 202
  },
  // Continuing starts a job like POST /api/jobs; a queued parent is not finished, so the manager's answer is 409.
  {
    route: "POST /api/jobs/:id/continue",
    guard: "agents.manage",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}/continue`, json: { task: "Go on." } }
    },
    ok: 409,
    changes: false
  },
  // A new API token needs a session: a leaked token cannot mint its successors (see the session-only tests below).
  { route: "POST /api/tokens", guard: "session", sample: async (n) => ({ path: "/api/tokens", json: { name: n } }), ok: 201 },
  {
    route: "DELETE /api/tokens/:id",
    guard: "read",
    // Someone else's token id: every caller gets the same 404 as for an unknown id; their own: 204 (tests below).
    sample: async (n) => ({ path: `/api/tokens/${await tokenIdOf(n)}` }),
    ok: 404
  },
  // One's own password (the current one proves it): any principal, and it changes a row (the hash).
  {
    route: "POST /api/account/password",
    guard: "self",
    sample: async () => ({ path: "/api/account/password", json: { currentPassword: PASSWORD, newPassword: PASSWORD } }),
    ok: 204
  },
  {
    route: "POST /api/admin/users",
    guard: "admin",
    sample: async (n) => ({ path: "/api/admin/users", json: { username: n, password: PASSWORD, permissions: ["agents.manage"] } }),
    ok: 201
  },
  {
    route: "PUT /api/admin/users/:name/permissions",
    guard: "admin",
    sample: async (n) => {
      await api.createUser(n, [])
      return { path: `/api/admin/users/${n}/permissions`, json: { permissions: ["agents.manage", "metrics.read"] } }
    },
    ok: 200
  },
  {
    route: "POST /api/admin/users/:name/password",
    guard: "admin",
    sample: async (n) => {
      await api.createUser(n, [])
      return { path: `/api/admin/users/${n}/password`, json: { password: "a fresh long password" } }
    },
    ok: 204
  },
  {
    route: "PATCH /api/admin/users/:name",
    guard: "admin",
    sample: async (n) => {
      await api.createUser(n, ["agents.manage"])
      return { path: `/api/admin/users/${n}`, json: { disabled: true } }
    },
    ok: 200
  },
  {
    route: "DELETE /api/admin/users/:name/permissions/:permission",
    guard: "admin",
    sample: async (n) => {
      await api.createUser(n, ["agents.manage"])
      return { path: `/api/admin/users/${n}/permissions/agents.manage` }
    },
    ok: 204
  },
  {
    route: "DELETE /api/admin/users/:name/tokens/:id",
    guard: "admin",
    sample: async (n) => ({ path: `/api/admin/users/${n}/tokens/${await tokenIdOf(n)}` }),
    ok: 204,
    changes: false
  },
  // The API's catch-all: no handler behind it, the same JSON 404 for everyone.
  { route: "ALL /api/*", guard: "fallback", sample: async (n) => ({ path: `/api/admin/${n}`, json: {} }), ok: 404 }
]

/** Every GET route of the JSON API and the probes: anonymous is refused (unless public), a signed-in reader may read. */
const GET: ReadonlyArray<RouteCase> = [
  { route: "GET /healthz", guard: "public", sample: async () => ({ path: "/healthz" }), ok: 200 },
  { route: "GET /readyz", guard: "public", sample: async () => ({ path: "/readyz" }), ok: 200 },
  { route: "GET /metrics", guard: "metrics.read", sample: async () => ({ path: "/metrics" }), ok: 200 },
  { route: "GET /api/session", guard: "read", sample: async () => ({ path: "/api/session" }), ok: 200 },
  { route: "GET /api/admin/agents", guard: "read", sample: async () => ({ path: "/api/admin/agents" }), ok: 200 },
  { route: "GET /api/admin/agents/context", guard: "read", sample: async () => ({ path: "/api/admin/agents/context" }), ok: 200 },
  ...(
    [
      ["GET /api/admin/agents/:name", ""],
      ["GET /api/admin/agents/:name/definition", "/definition"],
      ["GET /api/admin/agents/:name/export", "/export"],
      ["GET /api/admin/agents/:name/versions", "/versions"],
      ["GET /api/admin/agents/:name/restores", "/restores"],
      ["GET /api/admin/agents/:name/versions/:version", "/versions/1"],
      ["GET /api/admin/agents/:name/bindings", "/bindings"]
    ] as const
  ).map(
    ([route, suffix]): RouteCase => ({
      route,
      guard: "read",
      sample: async (n) => {
        await createAgent(api, n)
        return { path: `/api/admin/agents/${n}${suffix}` }
      },
      ok: 200
    })
  ),
  ...(
    [
      ["GET /api/admin/agents/:name/evals", "/evals"],
      ["GET /api/admin/agents/:name/versions/:version/evals", "/versions/1/evals"]
    ] as const
  ).map(
    ([route, suffix]): RouteCase => ({
      route,
      guard: "read",
      sample: async (n) => {
        await createAgent(api, n)
        return { path: `/api/admin/agents/${n}${suffix}` }
      },
      ok: 200
    })
  ),
  {
    route: "GET /api/admin/eval-runs/:id",
    guard: "read",
    sample: async (n) => {
      await createEvalAgent(n)
      const run = (await asManager("POST", `/api/admin/agents/${n}/versions/1/evals`, {})) as { run: { id: string } }
      return { path: `/api/admin/eval-runs/${run.run.id}` }
    },
    ok: 200
  },
  { route: "GET /api/admin/agent-skills", guard: "read", sample: async () => ({ path: "/api/admin/agent-skills" }), ok: 200 },
  ...(
    [
      ["GET /api/admin/agent-skills/:name/versions", "/versions"],
      ["GET /api/admin/agent-skills/:name/versions/:version", "/versions/1"]
    ] as const
  ).map(
    ([route, suffix]): RouteCase => ({
      route,
      guard: "read",
      sample: async (n) => {
        await createSkill(api, n)
        return { path: `/api/admin/agent-skills/${n}${suffix}` }
      },
      ok: 200
    })
  ),
  {
    route: "GET /api/admin/agent-skills/:name",
    guard: "read",
    sample: async (n) => {
      await createSkill(api, n)
      return { path: `/api/admin/agent-skills/${n}` }
    },
    ok: 200
  },
  { route: "GET /api/admin/providers", guard: "read", sample: async () => ({ path: "/api/admin/providers" }), ok: 200 },
  { route: "GET /api/admin/providers/catalog", guard: "read", sample: async () => ({ path: "/api/admin/providers/catalog" }), ok: 200 },
  {
    route: "GET /api/admin/providers/:id",
    guard: "read",
    sample: async (n) => {
      await createProvider(n)
      return { path: `/api/admin/providers/${n}` }
    },
    ok: 200
  },
  { route: "GET /api/admin/mcp-servers", guard: "read", sample: async () => ({ path: "/api/admin/mcp-servers" }), ok: 200 },
  {
    route: "GET /api/admin/mcp-servers/:name",
    guard: "read",
    sample: async (n) => {
      await asManager("PUT", `/api/admin/mcp-servers/${n}`, mcpBody)
      return { path: `/api/admin/mcp-servers/${n}` }
    },
    ok: 200
  },
  {
    // Lists live, so it connects with the stored headers: an admin's action. Nothing listens on port 9: 502.
    route: "GET /api/admin/mcp-servers/:name/tools",
    guard: "providers.manage",
    sample: async (n) => {
      await asManager("PUT", `/api/admin/mcp-servers/${n}`, { url: "http://127.0.0.1:9/mcp", allowPrivateNetwork: true })
      return { path: `/api/admin/mcp-servers/${n}/tools` }
    },
    ok: 502
  },
  { route: "GET /api/tokens", guard: "read", sample: async () => ({ path: "/api/tokens" }), ok: 200 },
  { route: "GET /api/admin/users", guard: "admin", sample: async () => ({ path: "/api/admin/users" }), ok: 200 },
  { route: "GET /api/admin/users/:name/tokens", guard: "admin", sample: async () => ({ path: "/api/admin/users/reader/tokens" }), ok: 200 },
  { route: "GET /api/projects", guard: "read", sample: async () => ({ path: "/api/projects" }), ok: 200 },
  {
    route: "GET /api/admin/web-search",
    guard: "read",
    sample: async () => {
      await asManager("PUT", "/api/admin/web-search", webSearchBody)
      return { path: "/api/admin/web-search" }
    },
    ok: 200
  },
  {
    route: "GET /api/projects/:id/web",
    guard: "read",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}/web` }
    },
    ok: 200
  },
  {
    route: "GET /api/projects/:id/memory",
    guard: "read",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}/memory` }
    },
    ok: 200
  },
  {
    route: "GET /api/projects/:id/memory/notes",
    guard: "read",
    sample: async (n) => ({ path: `/api/projects/${n}/memory/notes?trust=learned`, ...(await createNote(n), {}) }),
    ok: 200
  },
  {
    route: "GET /api/projects/:id/memory/notes/:noteId",
    guard: "read",
    sample: async (n) => ({ path: `/api/projects/${n}/memory/notes/${await createNote(n)}` }),
    ok: 200
  },
  {
    route: "GET /api/projects/:id/memory/log",
    guard: "read",
    sample: async (n) => {
      await createProject(n)
      return { path: `/api/projects/${n}/memory/log?date=2026-01-02` }
    },
    ok: 200
  },
  { route: "GET /api/jobs", guard: "read", sample: async () => ({ path: "/api/jobs" }), ok: 200 },
  {
    route: "GET /api/jobs/:id",
    guard: "read",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}` }
    },
    ok: 200
  },
  {
    route: "GET /api/jobs/:id/events",
    guard: "read",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}/events?format=json` }
    },
    ok: 200
  },
  {
    route: "GET /api/jobs/:id/transcript",
    guard: "transcripts.read",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}/transcript` }
    },
    ok: 200
  },
  {
    route: "GET /api/jobs/:id/export-test",
    guard: "transcripts.read",
    sample: async (n) => {
      await createAgent(api, n)
      return { path: `/api/jobs/${await createJob(n)}/export-test` }
    },
    // Past the guard, a queued job is refused: only a completed job with a transcript exports.
    ok: 409
  }
]

/** Routes of the HTML portal (not under /api/): classified in test/portal/routes.test.ts. */
const isPortalRoute = (r: { method: string; path: string }) =>
  !r.path.startsWith("/api/") && !["/healthz", "/readyz", "/metrics"].includes(r.path)

const methodOf = (c: RouteCase) => {
  const m = c.route.split(" ")[0] ?? ""
  return m === "ALL" ? "POST" : m
}

describe("every route is classified", () => {
  test("the app's API routes are exactly the routes of the matrix; every other route is a portal page", () => {
    const registered = api.app.routes.filter((r) => !isPortalRoute(r)).map((r) => `${r.method} ${r.path}`)
    const classified = [...NON_GET, ...GET].map((c) => c.route)
    const unclassified = registered.filter((r) => !classified.includes(r))
    const stale = classified.filter((r) => !registered.includes(r))
    expect({ unclassified, stale }).toEqual({ unclassified: [], stale: [] })
    // A non-GET route must be in the non-GET table (with its permission), not slipped in as a read.
    for (const r of api.app.routes) {
      if (r.method !== "GET" && !isPortalRoute(r)) expect(NON_GET.map((c) => c.route)).toContain(`${r.method} ${r.path}`)
    }
  })
})

type User = { readonly token: string }
let agentsOnly: User
let providersOnly: User
let metricsOnly: User
let transcriptsOnly: User
beforeAll(async () => {
  agentsOnly = await api.createUser("agents-only", ["agents.manage"])
  providersOnly = await api.createUser("providers-only", ["providers.manage"])
  metricsOnly = await api.createUser("metrics-only", ["metrics.read"])
  transcriptsOnly = await api.createUser("transcripts-only", ["transcripts.read"])
})

/** Who holds only the permission a guard needs, and who holds only the other one. */
const holders = (guard: Guard): { readonly holder: User; readonly other: User } | undefined =>
  guard === "agents.manage"
    ? { holder: agentsOnly, other: providersOnly }
    : guard === "providers.manage"
      ? { holder: providersOnly, other: agentsOnly }
      : undefined

describe("non-GET routes × {anonymous, no permission, the other permission, manager} with API tokens", () => {
  for (const c of NON_GET.filter((c) => c.guard !== "session")) {
    const manage = c.guard === "agents.manage" || c.guard === "providers.manage" || c.guard === "admin"
    const refusedAnonymous = c.guard === "public" || c.guard === "fallback" ? c.ok : 401
    test(`${c.route}: anonymous ${refusedAnonymous}, reader ${manage ? 403 : c.ok}, manager ${c.ok}`, async () => {
      const method = methodOf(c)
      const sample = await c.sample(unique("acl"))
      const before = await storeFingerprint(api)

      const anonymous = await api.request(method, sample.path, { json: sample.json })
      expect(anonymous.status).toBe(refusedAnonymous)
      if (refusedAnonymous === 401) expect(anonymous.json().error.code).toBe("unauthenticated")

      const reader = await api.request(method, sample.path, { token: api.reader.token, json: sample.json })
      expect(reader.status).toBe(manage ? 403 : c.ok)
      const who = holders(c.guard)
      if (who !== undefined) {
        expect(reader.json().error).toEqual({ code: "forbidden", message: `this needs the ${c.guard} permission` })
        // Holding the other permission is no better than holding none.
        const other = await api.request(method, sample.path, { token: who.other.token, json: sample.json })
        expect(other.status).toBe(403)
        // The guard runs before the body is read: garbage from a reader is still a 403, not a 400.
        const garbage = await api.request(method, sample.path, {
          token: api.reader.token,
          body: "{not json",
          headers: { "content-type": "application/json" }
        })
        expect(garbage.status).toBe(403)
      }
      if (c.guard === "admin") {
        expect(reader.json().error).toEqual({
          code: "forbidden",
          message: "this needs every admin permission (agents.manage, providers.manage)"
        })
        // One permission is not enough to administer users.
        for (const one of [agentsOnly, providersOnly])
          expect((await api.request(method, sample.path, { token: one.token, json: sample.json })).status).toBe(403)
        const garbage = await api.request(method, sample.path, {
          token: agentsOnly.token,
          body: "{not json",
          headers: { "content-type": "application/json" }
        })
        expect(garbage.status).toBe(403)
      }
      // Nothing a refused (or read-only) call did is visible in any store.
      if (c.guard !== "public" && c.guard !== "self") expect(await storeFingerprint(api)).toBe(before)

      const manager = await api.request(method, sample.path, { token: api.manager.token, json: sample.json })
      expect(manager.status).toBe(c.ok)
      if (manage && c.changes !== false) expect(await storeFingerprint(api)).not.toBe(before)
      if (c.guard === "read" || c.guard === "fallback") expect(await storeFingerprint(api)).toBe(before)

      if (who !== undefined) {
        // The guard's permission alone is enough.
        const fresh = await c.sample(unique("acl"))
        expect((await api.request(method, fresh.path, { token: who.holder.token, json: fresh.json })).status).toBe(c.ok)
      }
    })
  }
})

describe("non-GET routes with portal sessions (cookie + CSRF token + same origin)", () => {
  let readerSession: Session
  let managerSession: Session
  beforeAll(async () => {
    readerSession = await api.signIn("reader", PASSWORD)
    managerSession = await api.signIn("manager", PASSWORD)
  })

  for (const c of NON_GET.filter((c) => c.guard === "agents.manage" || c.guard === "providers.manage" || c.guard === "admin")) {
    test(`${c.route}: reader session 403, manager session ${c.ok}`, async () => {
      const method = methodOf(c)
      const sample = await c.sample(unique("acls"))
      const before = await storeFingerprint(api)
      const reader = await api.request(method, sample.path, { session: readerSession, json: sample.json })
      expect(reader.status).toBe(403)
      expect(await storeFingerprint(api)).toBe(before)
      // A manager's session without the CSRF token is refused too.
      const noCsrf = await api.request(method, sample.path, { session: managerSession, csrf: false, json: sample.json })
      expect(noCsrf.status).toBe(403)
      expect(await storeFingerprint(api)).toBe(before)
      const manager = await api.request(method, sample.path, { session: managerSession, json: sample.json })
      expect(manager.status).toBe(c.ok)
    })
  }
})

describe("routes on one's own account with portal sessions: CSRF token needed, the session stays", () => {
  for (const c of NON_GET.filter((c) => c.guard === "self")) {
    test(`${c.route}: without the CSRF token 403, with it ${c.ok} for reader and manager`, async () => {
      const method = methodOf(c)
      for (const user of ["reader", "manager"]) {
        const session = await api.signIn(user, PASSWORD)
        const sample = await c.sample(unique("self"))
        expect((await api.request(method, sample.path, { session, csrf: false, json: sample.json })).status).toBe(403)
        expect((await api.request(method, sample.path, { session, json: sample.json })).status).toBe(c.ok)
        expect((await api.request("GET", "/api/session", { session })).status).toBe(200)
      }
    })
  }
})

describe("session-only routes: any session may, no API token may", () => {
  for (const c of NON_GET.filter((c) => c.guard === "session")) {
    test(`${c.route}: anonymous 401, any token 403, reader and manager sessions ${c.ok}`, async () => {
      const method = methodOf(c)
      const sample = await c.sample(unique("acl"))
      expect((await api.request(method, sample.path, { json: sample.json })).status).toBe(401)
      for (const token of [api.reader.token, api.manager.token]) {
        const r = await api.request(method, sample.path, { token, json: sample.json })
        expect(r.status).toBe(403)
        expect(r.json().error.message).toBe("an API token cannot create API tokens; sign in (POST /api/session) and use the session")
      }
      for (const user of ["reader", "manager"]) {
        const session = await api.signIn(user, PASSWORD)
        expect((await api.request(method, sample.path, { session, csrf: false, json: sample.json })).status).toBe(403)
        expect((await api.request(method, (await c.sample(unique("acl"))).path, { session, json: sample.json })).status).toBe(c.ok)
      }
    })
  }
})

describe("GET routes: anonymous 401, a reader 200 (403 where a permission is needed)", () => {
  let readerSession: Session
  beforeAll(async () => {
    readerSession = await api.signIn("reader", PASSWORD)
  })
  for (const c of GET) {
    const anonymousStatus = c.guard === "public" ? c.ok : 401
    const readerStatus =
      c.guard === "admin" || c.guard === "providers.manage" || c.guard === "metrics.read" || c.guard === "transcripts.read" ? 403 : c.ok
    test(`${c.route}: anonymous ${anonymousStatus}, reader ${readerStatus}`, async () => {
      const sample = await c.sample(unique("get"))
      const anonymous = await api.request("GET", sample.path)
      expect(anonymous.status).toBe(anonymousStatus)
      const reader = await api.request("GET", sample.path, { token: api.reader.token })
      expect(reader.status).toBe(readerStatus)
      // A GET with a session needs no CSRF token.
      expect((await api.request("GET", sample.path, { session: readerSession, csrf: false })).status).toBe(readerStatus)
      if (c.guard === "admin" || c.guard === "metrics.read" || c.guard === "transcripts.read") {
        for (const one of [agentsOnly, providersOnly])
          expect((await api.request("GET", sample.path, { token: one.token })).status).toBe(403)
        expect((await api.request("GET", sample.path, { token: api.manager.token })).status).toBe(c.ok)
      }
      if (c.guard === "providers.manage") {
        expect((await api.request("GET", sample.path, { token: agentsOnly.token })).status).toBe(403)
        expect((await api.request("GET", sample.path, { token: providersOnly.token })).status).toBe(c.ok)
      }
      if (c.guard === "metrics.read") expect((await api.request("GET", sample.path, { token: metricsOnly.token })).status).toBe(c.ok)
      if (c.guard === "transcripts.read") {
        expect((await api.request("GET", sample.path, { token: transcriptsOnly.token })).status).toBe(c.ok)
        expect((await api.request("GET", sample.path, { token: metricsOnly.token })).status).toBe(403)
      }
    })
  }
})

describe("credentials that prove nothing are anonymous", () => {
  const path = "/api/admin/agents"
  test("an unknown Bearer token, an empty one and another scheme → 401", async () => {
    expect((await api.request("GET", path, { token: "kt_not-a-token" })).status).toBe(401)
    expect((await api.request("GET", path, { headers: { authorization: "Bearer " } })).status).toBe(401)
    expect((await api.request("GET", path, { headers: { authorization: `Basic ${btoa(`manager:${PASSWORD}`)}` } })).status).toBe(401)
  })

  test("a Bearer token wins over a session cookie: a bad token with a good cookie is still 401", async () => {
    const session = await api.signIn("manager", PASSWORD)
    const r = await api.request("GET", path, { session, headers: { authorization: "Bearer kt_nope" } })
    expect(r.status).toBe(401)
  })

  test("an unknown session cookie → 401", async () => {
    const r = await api.request("GET", path, { headers: { cookie: "__Host-kintsugi-session=not-a-session" } })
    expect(r.status).toBe(401)
    expect(r.json().error.code).toBe("unauthenticated")
  })

  test("a session cookie that is not valid percent-encoding → 401, not a 500", async () => {
    const r = await api.request("GET", path, { headers: { cookie: "__Host-kintsugi-session=%E0%A4%A" } })
    expect(r.status).toBe(401)
    expect(api.logs).toEqual([])
  })

  test("a revoked API token → 401", async () => {
    const user = await api.createUser("revoked-user", ["agents.manage"])
    expect((await api.request("GET", path, { token: user.token })).status).toBe(200)
    await api.sql(`UPDATE admin.api_token SET revoked_at = now() WHERE name = 'revoked-user-test'`)
    expect((await api.request("GET", path, { token: user.token })).status).toBe(401)
  })
})
