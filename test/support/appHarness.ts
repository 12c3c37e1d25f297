/**
 * An app over a fresh test database, for tests that drive the HTTP API with an API token (and,
 * optionally, the worker loops). Registers beforeAll/afterAll; call at the top level of a test file.
 */
import { afterAll, beforeAll } from "bun:test"
import { ConfigProvider, Effect } from "effect"
import { Access, type Permission } from "../../src/access/Access.ts"
import type { makeApp } from "../../src/http/app.ts"
import { makeTestApp, type TestRuntime } from "./testApp.ts"

export interface AppHarness {
  readonly rt: TestRuntime
  readonly app: ReturnType<typeof makeApp>
  /** Diagnostics the app and the worker logged. */
  readonly logs: Array<string>
  /** Every response body the harness saw, for leak checks. */
  readonly bodies: Array<string>
  /** A request with the admin's token (or `token`); the body is sent as JSON. */
  readonly api: (
    method: string,
    path: string,
    body?: unknown,
    token?: string
  ) => Promise<{ status: number; text: string; json: <T>() => T }>
  /** A user with these permissions, and an API token for it. */
  readonly user: (name: string, permissions: ReadonlyArray<Permission>) => Promise<string>
}

export const useApp = (options: { readonly workers?: number } = {}): AppHarness => {
  const state: { rt?: AppHarness["rt"]; app?: AppHarness["app"]; token?: string } = {}
  const logs: Array<string> = []
  const bodies: Array<string> = []
  const need = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("useApp: used outside the file's tests")
    return v
  }
  const user = async (name: string, permissions: ReadonlyArray<Permission>) => {
    const rt = need(state.rt)
    await rt.runPromise(Effect.flatMap(Access, (a) => a.addUser(name, "a long test password", permissions)))
    return rt.runPromise(Effect.flatMap(Access, (a) => a.issueToken(name, "test")))
  }
  beforeAll(async () => {
    const made = await makeTestApp({
      appLog: (l) => logs.push(l),
      // The worker count through Config, as the server reads it (the process environment untouched).
      ...(options.workers === undefined
        ? {}
        : {
            worker: { log: (l: string) => logs.push(l) },
            config: ConfigProvider.orElse(ConfigProvider.fromMap(new Map([["KINTSUGI_WORKERS", String(options.workers)]])), () =>
              ConfigProvider.fromEnv()
            )
          })
    })
    state.rt = made.runtime
    state.app = made.app
    state.token = await user("admin", ["agents.manage", "providers.manage"])
  }, 120_000)
  afterAll(async () => {
    await state.rt?.dispose()
  }, 60_000)
  return {
    get rt() {
      return need(state.rt)
    },
    get app() {
      return need(state.app)
    },
    logs,
    bodies,
    user,
    api: async (method, path, body, token) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token ?? need(state.token)}` }
      if (body !== undefined) headers["content-type"] = "application/json"
      const r = await need(state.app).handle(
        new Request(`http://localhost${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      )
      const text = await r.text()
      bodies.push(text)
      return { status: r.status, text, json: <T>() => JSON.parse(text) as T }
    }
  }
}
