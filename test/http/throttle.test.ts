/**
 * Sign-in throttling over HTTP (API and portal): 40 wrong passwords from one client give 429s with
 * Retry-After, the right one from that client is refused during the lockout and works after it (a
 * manual clock, no waiting), while the right one from any other client works at once; other usernames
 * from the same address only after the address's budget; the address is the socket's.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { makeSignInThrottle, type SignInThrottle, type SignInThrottleOptions } from "../../src/access/SignInThrottle.ts"
import { makeApp } from "../../src/http/app.ts"
import { listen } from "../../src/http/serve.ts"
import { PASSWORD, useApi } from "../support/api.ts"
import { manualClock } from "../support/manualClock.ts"

setDefaultTimeout(120_000)

const api = useApi()

/** An app of its own (fresh counts) on a test clock; `signIn` posts from a given client address. */
const throttledApp = (options: Partial<SignInThrottleOptions> = {}) => {
  const time = manualClock()
  const app = makeApp({ runtime: api.runtime, log: () => {}, signInThrottle: makeSignInThrottle({ ...options, clock: time.clock }) })
  const signIn = async (username: string, password: string, address = "192.0.2.1") => {
    const r = await app.handle(
      new Request("http://localhost/api/session", {
        method: "POST",
        headers: { host: "localhost", "content-type": "application/json" },
        body: JSON.stringify({ username, password })
      }),
      address
    )
    return {
      status: r.status,
      retryAfter: r.headers.get("retry-after"),
      body: (await r.json()) as { error?: { code: string; message: string } }
    }
  }
  return { app, signIn, advance: time.advance, slept: time.slept }
}

describe("the API's sign-in", () => {
  test("40 wrong passwords from one client: 10 × 401, then 429 with Retry-After; the right password from it waits out the lockout, then works", async () => {
    const { signIn, advance } = throttledApp()
    const statuses: Array<number> = []
    for (let i = 0; i < 40; i++) statuses.push((await signIn("manager", `wrong password ${i}`)).status)
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(30).fill(429)])

    const locked = await signIn("manager", PASSWORD)
    expect(locked.status).toBe(429)
    expect(locked.retryAfter).toBe("60")
    expect(locked.body).toEqual({
      error: { code: "too-many-requests", message: "too many failed sign-ins for this username from this address; try again in 60 seconds" }
    })

    advance(59_000)
    expect((await signIn("manager", PASSWORD)).status).toBe(429)
    advance(1_000)
    expect((await signIn("manager", PASSWORD)).status).toBe(200)
  })

  test("an attacker's failures from many clients never refuse the right password from a client that has not failed: it is slowed, not locked", async () => {
    const { signIn, slept } = throttledApp()
    const statuses = new Set<number>()
    for (let client = 0; client < 5; client++)
      for (let i = 0; i < 12; i++) statuses.add((await signIn("manager", `guess ${client}-${i}`, `203.0.113.${client}`)).status)
    expect([...statuses].sort()).toEqual([401, 429])
    const waited = slept.length
    const home = await signIn("manager", PASSWORD, "198.51.100.20")
    expect(home.status).toBe(200)
    // Past the account's ceiling (20 failures): the check waited a second first.
    expect(slept.slice(waited)).toEqual([1_000])
    // Each attacker stays locked out of the account.
    expect((await signIn("manager", PASSWORD, "203.0.113.0")).status).toBe(429)
  })

  test("an unknown username is throttled exactly like a known one (the 429 says nothing about existence)", async () => {
    const { signIn } = throttledApp()
    const known: Array<number> = []
    const unknown: Array<number> = []
    for (let i = 0; i < 11; i++) known.push((await signIn("reader", "wrong password!", "192.0.2.7")).status)
    for (let i = 0; i < 11; i++) unknown.push((await signIn("nobody-here", "wrong password!", "192.0.2.8")).status)
    expect(unknown).toEqual(known)
    expect((await signIn("nobody-here", "x", "192.0.2.9")).body).toEqual((await signIn("reader", "x", "192.0.2.9")).body)
  })

  test("another username from the same address is throttled only after the address's budget; other addresses are not", async () => {
    const { signIn } = throttledApp({ perClientAccount: 3, perClient: 7 })
    const from = "198.51.100.4"
    const seen: Array<string> = []
    for (const user of ["manager", "manager", "manager", "manager"])
      seen.push(`${user} ${(await signIn(user, "wrong password", from)).status}`)
    // manager is locked (3 failures) but reader, from the same address, still gets a real answer…
    for (const user of ["reader", "reader", "ghost-1", "ghost-2"])
      seen.push(`${user} ${(await signIn(user, "wrong password", from)).status}`)
    // …until the address has spent its 7 failures.
    seen.push(`ghost-3 ${(await signIn("ghost-3", "wrong password", from)).status}`)
    expect(seen).toEqual([
      "manager 401",
      "manager 401",
      "manager 401",
      "manager 429",
      "reader 401",
      "reader 401",
      "ghost-1 401",
      "ghost-2 401",
      "ghost-3 429"
    ])
    const blocked = await signIn("reader", PASSWORD, from)
    expect({ status: blocked.status, message: blocked.body.error?.message }).toEqual({
      status: 429,
      message: "too many failed sign-ins from this address; try again in 60 seconds"
    })
    expect((await signIn("reader", PASSWORD, "198.51.100.5")).status).toBe(200)
  })
})

describe("the portal's sign-in", () => {
  test("throttled with the API's budget: the sign-in page again, 429 and Retry-After", async () => {
    const { app } = throttledApp()
    const post = async (password: string) => {
      const r = await app.handle(
        new Request("http://localhost/sign-in", {
          method: "POST",
          headers: { host: "localhost", "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ username: "reader", password, next: "/agents" })
        }),
        "203.0.113.3"
      )
      return { status: r.status, retryAfter: r.headers.get("retry-after"), text: await r.text() }
    }
    const statuses: Array<number> = []
    for (let i = 0; i < 12; i++) statuses.push((await post(`wrong ${i}`)).status)
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429])
    const locked = await post(PASSWORD)
    expect({ status: locked.status, retryAfter: locked.retryAfter }).toEqual({ status: 429, retryAfter: "60" })
    expect(locked.text).toContain("too many failed sign-ins for this username from this address; try again in 60 seconds")
    expect(locked.text).toContain('name="password"')
  })
})

test("through a real server, the client address is the socket's, not a forwarded header", async () => {
  const addresses: Array<string> = []
  const spy: SignInThrottle["Type"] = {
    guard: (_username, address, signIn) => {
      addresses.push(address)
      return signIn
    },
    tracked: () => ({ pairs: 0, clients: 0, accounts: 0 })
  }
  const app = makeApp({ runtime: api.runtime, log: () => {}, signInThrottle: spy })
  const server = listen(app, { hostname: "127.0.0.1", port: 0 })
  try {
    const r = await fetch(`http://127.0.0.1:${server.port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.99" },
      body: JSON.stringify({ username: "reader", password: "wrong password" })
    })
    expect(r.status).toBe(401)
    expect(addresses).toEqual(["127.0.0.1"])
  } finally {
    await server.stop(true)
  }
})
