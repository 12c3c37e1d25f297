/**
 * The newcomer's pages through app.handle: Home and the run form name the job roots, a run refused
 * for its folders names them too, the run form fills its folders from a workspace, and "New
 * workspace" refuses bad names, existing folders, bad git URLs and hostile archives at their fields
 * (readers may look, not create).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, mkdirSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { makeApp } from "../../src/http/app.ts"
import { writeZip } from "../../src/agents/zip.ts"
import { createTarGz } from "../support/archives.ts"
import { queueableBinding } from "../support/api.ts"
import { createRootDir, testJobRoots } from "../support/jobRoots.ts"
import { makeTestAppRuntime } from "../support/testApp.ts"
import { signInTestUsers, type AppRuntime } from "./harness.ts"

setDefaultTimeout(60_000)

const BASE = "http://localhost"
const SAME_ORIGIN = { host: "localhost", origin: BASE, "sec-fetch-site": "same-origin" }

let runtime: AppRuntime
let app: ReturnType<typeof makeApp>
let root = ""
let sessions: Awaited<ReturnType<typeof signInTestUsers>>

const send = (method: string, path: string, who: "manager" | "reader", body?: FormData | URLSearchParams) => {
  const s = sessions[who]
  if (body !== undefined) body.set("_csrf", s.csrf)
  return app.handle(
    new Request(`${BASE}${path}`, {
      method,
      headers: { ...SAME_ORIGIN, cookie: `__Host-kintsugi-session=${s.cookie}` },
      body: body ?? null,
      redirect: "manual"
    })
  )
}
const text = async (r: Response | Promise<Response>) => (await r).text()

const workspaceForm = (fields: Record<string, string>, archive?: File) => {
  const f = new FormData()
  for (const [k, v] of Object.entries({ root, source: "archive", url: "", ...fields })) f.append(k, v)
  if (archive !== undefined) f.append("archive", archive)
  return f
}
const zipFile = (name = "src.zip") => new File([writeZip([{ path: "main.py", content: "print(1)\n" }])], name, { type: "application/zip" })

beforeAll(async () => {
  // A job root of this file's own: the workspaces listed are exactly the ones made here.
  root = realpathSync(createRootDir("own-root-"))
  runtime = await makeTestAppRuntime({ jobRoots: testJobRoots([root]) })
  app = makeApp({ runtime, log: (line) => console.error(line) })
  sessions = await signInTestUsers(runtime)
  await runtime.runPromise(queueableBinding("codebase-inventory"))
}, 120_000)

afterAll(async () => {
  await runtime?.dispose()
})

describe("Home, workspaces and the run form", () => {
  test("Home names the job roots and is in the navigation; a reader sees the workspaces but not the form", async () => {
    const home = await text(send("GET", "/home", "reader"))
    expect(home).toContain(`<li><code>${root}</code></li>`)
    expect(home).toContain('<a href="/home" aria-current="page">Home</a>')
    expect(await text(send("GET", "/workspaces", "reader"))).toContain("No workspaces yet.")
    expect((await send("GET", "/workspaces/-/new", "reader")).status).toBe(403)
    expect((await send("POST", "/workspaces", "reader", workspaceForm({ name: "nope" }, zipFile()))).status).toBe(403)
    expect(existsSync(join(root, "nope"))).toBe(false)
  })

  test("New workspace: every problem at its field; an existing folder is 409 and stays as it was", async () => {
    const missing = await send("POST", "/workspaces", "manager", workspaceForm({ name: "../up" }))
    expect(missing.status).toBe(400)
    const body = await missing.text()
    expect(body).toContain("Folder name: use letters, digits, dots, dashes and underscores, starting with a letter or digit")
    expect(body).toContain("Archive: choose a .zip or .tar.gz file")
    expect(body).toContain(`pattern="[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}" maxlength="64"`)
    const slip = await text(
      send(
        "POST",
        "/workspaces",
        "manager",
        workspaceForm({ name: "slip" }, new File([createTarGz([{ name: "../../x", content: "x" }])], "s.tar.gz"))
      )
    )
    expect(slip).toContain("Archive: ../../x: &#96;..&#96; segments are not allowed")
    const outside = await send("POST", "/workspaces", "manager", workspaceForm({ name: "elsewhere", root: "/tmp" }, zipFile()))
    expect(outside.status).toBe(400)
    expect(await outside.text()).toContain("Job root: is not one of this server&#39;s job roots")
    for (const url of ["http://example.com/r.git", "git@github.com:o/r.git", "https://u:p@github.com/o/r.git", "https://10.1.2.3/r.git"]) {
      const refused = await send("POST", "/workspaces", "manager", workspaceForm({ name: "cloned", source: "git", url }))
      expect({ url, status: refused.status }).toEqual({ url, status: 400 })
      expect(await refused.text()).toContain("Git URL: ")
    }
    mkdirSync(join(root, "taken"))
    const taken = await send("POST", "/workspaces", "manager", workspaceForm({ name: "taken" }, zipFile()))
    expect(taken.status).toBe(409)
    expect(await taken.text()).toContain("a folder &quot;taken&quot; already exists in this job root")
    for (const name of ["slip", "elsewhere", "cloned"]) expect(existsSync(join(root, name))).toBe(false)
  })

  test("created from a .zip: listed, then offered by the run form, which fills in its folders", async () => {
    const created = await send("POST", "/workspaces", "manager", workspaceForm({ name: "app" }, zipFile()))
    expect(created.status).toBe(303)
    expect(created.headers.get("location")).toBe("/workspaces?added=app")
    const list = await text(send("GET", "/workspaces?added=app", "manager"))
    expect(list).toContain("Added app.")
    expect(list).toContain(`<code>${join(root, "app", "src")}</code>`)
    const form = await text(send("GET", "/agents/codebase-inventory/run", "manager"))
    expect(form).toContain(`<option value="${join(root, "app")}">app</option>`)
    const filled = await text(send("GET", `/agents/codebase-inventory/run?workspace=${encodeURIComponent(join(root, "app"))}`, "manager"))
    expect(filled).toContain(`name="root" type="text" inputmode="text" value="${join(root, "app")}"`)
    expect(filled).toContain(`>${join(root, "app", "src")}</textarea>`)
    expect(filled).toContain(`name="outDir" type="text" inputmode="text" value="${join(root, "app", "out")}"`)
    const stale = await send("GET", `/agents/codebase-inventory/run?workspace=${encodeURIComponent("/etc")}`, "manager")
    expect(stale.status).toBe(400)
    expect(await stale.text()).toContain("the chosen workspace is not in the job roots (any more)")
  })

  test("a run refused for its folders names the job roots; one inside them starts", async () => {
    const run = (fields: Record<string, string>) =>
      send("POST", "/agents/codebase-inventory/run", "manager", new URLSearchParams({ task: "Look.", timeoutSec: "60", ...fields }))
    const refused = await run({ root: "/etc", readOnly: "/etc", outDir: "/tmp" })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain(`every folder must lie inside a job root of this server: ${root}`)
    const started = await run({ root: join(root, "app"), readOnly: join(root, "app", "src"), outDir: join(root, "app", "out") })
    expect(started.status).toBe(303)
    expect(started.headers.get("location")).toMatch(/^\/jobs\/[0-9a-f-]{36}$/)
    // A refusal for anything but the folders does not add the roots.
    const noTask = await text(
      run({ task: "", root: join(root, "app"), readOnly: join(root, "app", "src"), outDir: join(root, "app", "out") })
    )
    expect(noTask).not.toContain("every folder must lie inside a job root")
  })
})
