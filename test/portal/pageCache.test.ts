/**
 * Signed-in pages answered from memory (src/http/portal/pageCache.ts): the same session asking the
 * same URL again before anything was written gets the bytes it was sent without the page running again;
 * every write, another session, another URL or htmx header, an Authorization header, a session's end or
 * the cache's time bound renders again. Through the real catalog page: sign-out, a permission taken
 * away, a new agent and another user are each seen on the next request.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { Access, PRINCIPAL_TTL_MS, type Principal } from "../../src/access/Access.ts"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import type { makeApp } from "../../src/http/app.ts"
import { SESSION_COOKIE } from "../../src/http/auth.ts"
import { loadAssets } from "../../src/http/portal/assets.ts"
import { makePageCache } from "../../src/http/portal/pageCache.ts"
import { portalRunner } from "../../src/http/portal/portalRoute.ts"
import { makeTestApp } from "../support/testApp.ts"
import { signInTestUsers, type AppRuntime } from "./harness.ts"

setDefaultTimeout(60_000)

const BASE = "http://localhost"

let runtime: AppRuntime
let app: ReturnType<typeof makeApp>
let sessions: Record<"manager" | "reader", { cookie: string; csrf: string }>

beforeAll(async () => {
  ;({ runtime, app } = await makeTestApp())
  sessions = await signInTestUsers(runtime)
})
afterAll(() => runtime.dispose())

const request = (path: string, cookie: string | undefined, headers: Record<string, string> = {}) =>
  new Request(`${BASE}${path}`, {
    headers: {
      host: "localhost",
      ...(cookie === undefined ? {} : { cookie: `${SESSION_COOKIE}=${encodeURIComponent(cookie)}` }),
      ...headers
    }
  })

const agentFile = (name: string) => ({
  files: [
    {
      path: `${name}.md`,
      content: `---\nname: ${name}\nversion: 1\ndescription: A cached-page test agent.\ntools:\n  - read\n---\nYou help.\n`
    }
  ]
})

describe("cachedPage", () => {
  test("the same session and URL get the page from memory until a write; every other request renders", async () => {
    const portal = portalRunner(runtime, () => undefined, loadAssets().urls)
    let renders = 0
    const page = portal.cachedPage("read", ({ principal }) =>
      Effect.sync(() => {
        renders++
        return new Blob([`render ${renders} for ${principal.username}`])
      })
    )
    const get = async (req: Request) => {
      const response = await page({ request: req, params: {} })
      return { status: response.status, text: await response.text() }
    }
    const manager = sessions.manager.cookie

    expect(await get(request("/p", manager))).toEqual({ status: 200, text: "render 1 for manager" })
    expect(await get(request("/p", manager))).toEqual({ status: 200, text: "render 1 for manager" })
    expect(renders).toBe(1)
    // Another session, query, htmx header: each its own page.
    expect((await get(request("/p", sessions.reader.cookie))).text).toBe("render 2 for reader")
    expect((await get(request("/p?q=x", manager))).text).toBe("render 3 for manager")
    expect((await get(request("/p", manager, { "hx-request": "true" }))).text).toBe("render 4 for manager")
    expect((await get(request("/p", manager))).text).toBe("render 1 for manager")
    expect(renders).toBe(4)
    // An Authorization header authenticates the request, not its cookie: never answered from memory
    // (a wrong token is refused: the portal sends a GET to sign in).
    const withBearer = await get(request("/p", manager, { authorization: "Bearer not-a-token" }))
    expect(withBearer.status).toBe(303)
    // Anonymous: the sign-in redirect, nothing rendered.
    expect((await page({ request: request("/p", undefined), params: {} })).status).toBe(303)
    expect(renders).toBe(4)

    // A write (any topic: here the catalog) renders again, once.
    await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.create(agentFile("cached-page-one"), "manager")))
    expect((await get(request("/p", manager))).text).toBe("render 5 for manager")
    expect((await get(request("/p", manager))).text).toBe("render 5 for manager")
    expect(renders).toBe(5)
  })

  test("held pages end at the session's expiry and at the principal's time bound", () => {
    let now = 1_000_000
    let epoch: number | undefined = 7
    const cache = makePageCache({ epoch: () => epoch, now: () => now, max: 2 })
    const principal = (expiresIn: number): Principal => ({
      userId: "u",
      username: "ann",
      permissions: new Set(),
      via: "session",
      csrfToken: "c",
      expiresAt: new Date(now + expiresIn)
    })
    const body = new Blob(["page"])
    cache.keep("a", 7, principal(60_000), body)
    expect(cache.get("a")?.body).toBe(body)
    now += 59_999
    expect(cache.get("a")).toBeUndefined() // past PRINCIPAL_TTL_MS (30 s) already
    cache.keep("b", 7, principal(10), body)
    now += 9
    expect(cache.get("b")?.body).toBe(body)
    now += 1
    expect(cache.get("b")).toBeUndefined() // the session ended
    cache.keep("c", 7, principal(PRINCIPAL_TTL_MS * 2), body)
    now += PRINCIPAL_TTL_MS - 1
    expect(cache.get("c")?.body).toBe(body)
    now += 1
    expect(cache.get("c")).toBeUndefined()
    // A page rendered before a write is not kept; nor one of a token or a session without an expiry.
    cache.keep("d", 6, principal(60_000), body)
    cache.keep("e", 7, { ...principal(60_000), via: "token" }, body)
    const { expiresAt: _, ...noExpiry } = principal(60_000)
    cache.keep("f", 7, noExpiry, body)
    expect([cache.get("d"), cache.get("e"), cache.get("f")]).toEqual([undefined, undefined, undefined])
    // Writes unseen: nothing is answered or kept.
    cache.keep("g", 7, principal(60_000), body)
    epoch = undefined
    expect(cache.get("g")).toBeUndefined()
    cache.keep("h", undefined, principal(60_000), body)
    epoch = 7
    expect(cache.get("g")).toBeUndefined()
    expect(cache.get("h")).toBeUndefined()
    // Bounded: full, it is emptied.
    cache.keep("i", 7, principal(60_000), body)
    cache.keep("j", 7, principal(60_000), body)
    cache.keep("k", 7, principal(60_000), body)
    expect([cache.get("i"), cache.get("j"), cache.get("k")?.body]).toEqual([undefined, undefined, body])
  })
})

describe("the catalog page answered from memory", () => {
  const catalog = async (cookie: string) => {
    const response = await app.handle(request("/agents", cookie))
    return { status: response.status, location: response.headers.get("location"), text: await response.text() }
  }

  test("another user, a new agent, a permission taken away and a sign-out are seen on the next request", async () => {
    await runtime.runPromise(Effect.flatMap(Access, (a) => a.addUser("carol", "correct horse battery staple", ["agents.manage"])))
    const carol = (await runtime.runPromise(Effect.flatMap(Access, (a) => a.signIn("carol", "correct horse battery staple")))).token

    const first = await catalog(carol)
    expect(first.status).toBe(200)
    expect(first.text).toContain(">carol</a>")
    expect(first.text).toContain('href="/agents/-/new"')
    expect((await catalog(carol)).text).toBe(first.text)
    const reader = await catalog(sessions.reader.cookie)
    expect(reader.text).toContain(">reader</a>")
    expect(reader.text).not.toContain(">carol</a>")

    await runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.create(agentFile("cached-page-two"), "carol")))
    expect((await catalog(carol)).text).toContain("cached-page-two")

    await runtime.runPromise(Effect.flatMap(Access, (a) => a.setPermissions("carol", [])))
    const reading = await catalog(carol)
    expect(reading.status).toBe(200)
    expect(reading.text).not.toContain('href="/agents/-/new"')

    await runtime.runPromise(Effect.flatMap(Access, (a) => a.signOut(carol)))
    const signedOut = await catalog(carol)
    expect(signedOut.status).toBe(303)
    expect(signedOut.location).toBe("/sign-in?next=%2Fagents")
  })
})
