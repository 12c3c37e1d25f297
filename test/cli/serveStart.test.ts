/**
 * `kintsugi serve` answers /healthz as soon as the database does; what start-up still does after that
 * (on a new database, the first admin) keeps /readyz at 503 `starting`, so readiness never claims
 * more than is done: the moment /readyz says ready, the admin can sign in.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { makeApp } from "../../src/http/app.ts"
import { makeTestAppRuntime } from "../support/testApp.ts"
import { createServeHome, startServe, type ServeProcess } from "../support/serveProcess.ts"

setDefaultTimeout(120_000)

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

describe("serve start-up and readiness", () => {
  test("/readyz is 503 naming what start-up still does, then 200; /healthz answers meanwhile", async () => {
    const runtime = await makeTestAppRuntime()
    cleanups.push(() => runtime.dispose())
    let starting: string | undefined = "creating the first admin"
    const app = makeApp({ runtime, starting: () => starting })
    const during = await app.handle(new Request("http://localhost/readyz"))
    expect(during.status).toBe(503)
    expect(await during.json()).toEqual({ status: "starting", detail: "creating the first admin" })
    expect((await app.handle(new Request("http://localhost/healthz"))).status).toBe(200)
    starting = undefined
    const after = await app.handle(new Request("http://localhost/readyz"))
    expect(after.status).toBe(200)
    expect(await after.json()).toEqual({ status: "ready" })
  })

  test("/readyz is 503 `draining` once the server drains; the process's own facts join every body", async () => {
    const runtime = await makeTestAppRuntime()
    cleanups.push(() => runtime.dispose())
    let draining = false
    const app = makeApp({ runtime, draining: () => draining, about: () => ({ fact: "value" }) })
    const ready = await app.handle(new Request("http://localhost/readyz"))
    expect(ready.status).toBe(200)
    expect(ready.headers.get("content-type")).toStartWith("application/json")
    expect(await ready.json()).toEqual({ status: "ready", fact: "value" })
    draining = true
    const during = await app.handle(new Request("http://localhost/readyz"))
    expect(during.status).toBe(503)
    expect(await during.json()).toEqual({
      status: "draining",
      detail: "the server is shutting down: it claims no job and lets running jobs finish",
      fact: "value"
    })
    expect((await app.handle(new Request("http://localhost/healthz"))).status).toBe(200)
  })

  test("a real first start: once /readyz says ready the admin signs in; the secrets re-exec still hides the password", async () => {
    const { home, cleanup } = await createServeHome()
    const password = "first start admin password"
    let serve: ServeProcess | undefined
    cleanups.push(async () => {
      await serve?.stop()
      cleanup()
    })
    serve = await startServe({
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: home,
      KINTSUGI_DATA_DIR: home,
      KINTSUGI_WORKERS: "0",
      KINTSUGI_ADMIN_PASSWORD: password
    })
    expect(serve.output()).toContain("created user admin")
    const ready = await fetch(`${serve.origin}/readyz`)
    expect(ready.status).toBe(200)
    const signIn = await fetch(`${serve.origin}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password })
    })
    expect(signIn.status).toBe(200)
    const environ = await Bun.file(`/proc/${serve.proc.pid}/environ`).text()
    expect(environ).not.toContain(password)
  })
})
