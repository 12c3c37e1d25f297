/**
 * A project's resource limits in the portal through app.handle: the settings form has a number input
 * for each (the server's current value as its placeholder) and says a project can only lower them; a
 * save stores them and the form shows them; a bad value is refused at its field with nothing stored; a
 * reader sees what applies.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { ConfigProvider, Effect } from "effect"
import { makeApp } from "../../src/http/app.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"
import { signInTestUsers } from "./harness.ts"

setDefaultTimeout(60_000)

const BASE = "http://localhost"
let made: TestApp
let app: ReturnType<typeof makeApp>
const sessions: Record<string, { cookie: string; csrf: string }> = {}

const send = async (method: "GET" | "POST", path: string, session: string, fields: Record<string, string> = {}, htmx = false) => {
  const s = sessions[session]!
  const body = new URLSearchParams(fields)
  if (method === "POST") body.set("_csrf", s.csrf)
  const headers: Record<string, string> = {
    host: "localhost",
    origin: BASE,
    "sec-fetch-site": "same-origin",
    cookie: `__Host-kintsugi-session=${s.cookie}`
  }
  if (htmx) Object.assign(headers, { "hx-request": "true", "hx-current-url": `${BASE}${path}` })
  const res = await app.handle(
    new Request(`${BASE}${path}`, { method, headers, body: method === "POST" ? body : null, redirect: "manual" })
  )
  return { status: res.status, location: res.headers.get("location"), text: await res.text() }
}

/** The `<input>` of one field. */
const input = (page: string, name: string): string => new RegExp(`<input id="f-${name}"[^>]*>`).exec(page)?.[0] ?? ""
/** The summary's links: target id → text. */
const summary = (page: string): Record<string, string> => {
  const box = /<div class="error-summary"[\s\S]*?<\/div>/.exec(page)?.[0] ?? ""
  return Object.fromEntries([...box.matchAll(/<a href="#([^"]+)">([^<]*)<\/a>/g)].map((m) => [m[1] ?? "", m[2] ?? ""]))
}
const stored = () =>
  made.runtime.runPromise(
    Effect.map(
      Effect.flatMap(Projects, (p) => p.get("sized-p")),
      (p) => p.resources
    )
  )
const EMPTY = { memoryMb: "", processes: "", cpuSec: "", tmpMb: "", outDirMb: "" }

beforeAll(async () => {
  // The server's own settings: two set, the rest at their defaults.
  const config = ConfigProvider.fromMap(
    new Map([
      ["KINTSUGI_JOB_MEMORY_MB", "768"],
      ["KINTSUGI_JOB_CPU_SEC", "120"]
    ])
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  made = await makeTestApp({ config })
  app = made.app
  Object.assign(sessions, await signInTestUsers(made.runtime))
  await made.runtime.runPromise(Effect.flatMap(Projects, (p) => p.create({ id: "sized-p", name: "Sized" })))
}, 120_000)

afterAll(async () => {
  await made?.dispose()
})

describe("project resource limits in the portal", () => {
  test("the form: five number inputs with the server's values as placeholders, saying a project can only lower them", async () => {
    const page = (await send("GET", "/projects/sized-p", "manager")).text
    expect(page).toContain("A project can only lower the server's limits, never raise them")
    const placeholders = Object.fromEntries(
      ["memoryMb", "processes", "cpuSec", "tmpMb", "outDirMb"].map((k) => [k, /placeholder="(\d+)"/.exec(input(page, k))?.[1]])
    )
    expect(placeholders).toEqual({ memoryMb: "768", processes: "256", cpuSec: "120", tmpMb: "256", outDirMb: "1024" })
    for (const k of Object.keys(placeholders)) {
      expect(input(page, k)).toContain('type="number"')
      expect(input(page, k)).toContain('value=""')
    }
  })

  test("a save stores them and the form shows them; emptied fields go back to the server's", async () => {
    const saved = await send("POST", "/projects/sized-p", "manager", {
      name: "Sized",
      root: "",
      ...EMPTY,
      memoryMb: "512",
      processes: "16",
      outDirMb: "2048"
    })
    expect(saved).toMatchObject({ status: 303, location: "/projects/sized-p?project-saved=1" })
    expect(await stored()).toEqual({ memoryMb: 512, processes: 16, outDirMb: 2048 })
    const page = (await send("GET", "/projects/sized-p?project-saved=1", "manager")).text
    expect(page).toContain("Saved the settings of Sized.")
    expect(input(page, "memoryMb")).toContain('value="512"')
    expect(input(page, "processes")).toContain('value="16"')
    expect(input(page, "cpuSec")).toContain('value=""')
    expect(input(page, "outDirMb")).toContain('value="2048"')

    // In place (htmx): the page's body with the new values.
    const inPlace = await send("POST", "/projects/sized-p", "manager", { name: "Sized", root: "", ...EMPTY, cpuSec: "30" }, true)
    expect(inPlace.status).toBe(200)
    expect(inPlace.text).not.toContain("<html")
    expect(input(inPlace.text, "cpuSec")).toContain('value="30"')
    expect(input(inPlace.text, "memoryMb")).toContain('value=""')
    expect(await stored()).toEqual({ cpuSec: 30 })
  })

  test("0, -1, 1.5 and x are refused at their fields, typed values kept, nothing stored", async () => {
    const refused = await send("POST", "/projects/sized-p", "manager", {
      name: "Sized",
      root: "",
      memoryMb: "0",
      processes: "-1",
      cpuSec: "1.5",
      tmpMb: "x",
      outDirMb: ""
    })
    expect(refused.status).toBe(400)
    expect(summary(refused.text)).toEqual({
      "problems-memoryMb": "Memory: must be a positive integer, got 0",
      "problems-processes": "Processes at once: must be a positive integer, got -1",
      "problems-cpuSec": "CPU time per process: must be a positive integer, got 1.5",
      "problems-tmpMb": "Temporary space: enter a number"
    })
    for (const [k, v] of [
      ["memoryMb", "0"],
      ["processes", "-1"],
      ["cpuSec", "1.5"],
      ["tmpMb", "x"]
    ] as const) {
      expect(input(refused.text, k)).toContain(`value="${v}"`)
      expect(input(refused.text, k)).toContain('aria-invalid="true"')
    }
    expect(input(refused.text, "outDirMb")).not.toContain("aria-invalid")
    expect(await stored()).toEqual({ cpuSec: 30 })
  })

  test("a reader sees what applies: the project's value, the server's where it has none or is lower", async () => {
    await send("POST", "/projects/sized-p", "manager", { name: "Sized", root: "", ...EMPTY, memoryMb: "512", tmpMb: "4096" })
    const page = (await send("GET", "/projects/sized-p", "reader")).text
    expect(page).not.toContain('action="/projects/sized-p"')
    expect(page).toContain("<dt>Memory</dt><dd>512 MiB</dd>")
    expect(page).toContain(`<dt>Processes at once</dt><dd><span class="muted">the server's: 256</span></dd>`)
    expect(page).toContain(`<dt>CPU time per process</dt><dd><span class="muted">the server's: 120 s</span></dd>`)
    expect(page).toContain(`<dt>Temporary space</dt><dd>4096 MiB <span class="muted">(the server's 256 MiB applies)</span></dd>`)
    expect(page).toContain("A project can only lower the server's resource limits, never raise them.")
  })
})
