/**
 * The job boundary at POST /api/jobs against path tricks: a read-only FILE that is a
 * symlink to the key file, a FIFO, trailing slashes and `//`, `<data>/workspaces/../data` under the
 * default root, a Unicode look-alike of the data dir, an over-long path, a project root that holds
 * another project. Every one is refused (or harmless), nothing is queued, no response names a host path.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { INSTALL_DIR } from "../../src/worker/JobRoots.ts"
import { bindAgent, useApi } from "../support/api.ts"
import { createFakeDataDir, testJobRoots } from "../support/jobRoots.ts"

setDefaultTimeout(30_000)

const { dataDir } = createFakeDataDir("kintsugi-edges-", "edge-key-canary")
// The default layout: job root = <data dir>/workspaces, a carve-out of the data dir.
const roots = join(dataDir, "workspaces")
mkdirSync(roots, { recursive: true })
const api = useApi({ jobRoots: testJobRoots([], dataDir) })
// Bound, so a job of it may be queued (admission refuses an agent with no binding).
beforeAll(() => bindAgent(api, "codebase-inventory"))

let n = 0
const createWorkspace = () => {
  const root = join(roots, `ws-${++n}`)
  mkdirSync(join(root, "src"), { recursive: true })
  mkdirSync(join(root, "out"), { recursive: true })
  writeFileSync(join(root, "src", "a.ts"), "export const a = 1\n")
  return { root, src: join(root, "src"), out: join(root, "out") }
}
const body = (workspace: { root: string; readOnly: ReadonlyArray<string>; outDir: string }) => ({
  agent: "codebase-inventory",
  task: "Look.",
  workspace,
  limits: { timeoutSec: 60 }
})
const countJobs = async () => (await api.sql<{ n: number }>("SELECT count(*)::int AS n FROM runtime.job"))[0]?.n ?? -1

const refused = async (workspace: { root: string; readOnly: ReadonlyArray<string>; outDir: string }) => {
  const before = await countJobs()
  const r = await api.request("POST", "/api/jobs", { token: api.manager.token, json: body(workspace) })
  expect({ status: r.status, text: r.text.slice(0, 400) }).toMatchObject({ status: 400 })
  expect(r.text).not.toContain("edge-key-canary")
  expect(r.text).not.toContain(INSTALL_DIR)
  expect(await countJobs()).toBe(before)
  return r.json<{ error: { problems: Array<{ path: string; message: string }> } }>().error.problems.map((p) => `${p.path}: ${p.message}`)
}

describe("job boundary edge cases (default root under the data dir)", () => {
  test("a read-only FILE that is a symlink to the key file or a database file; a FIFO", async () => {
    const ws = createWorkspace()
    symlinkSync(join(dataDir, "secret.key"), join(ws.src, "key"))
    symlinkSync(join(dataDir, "data", "PG_VERSION"), join(ws.src, "pg"))
    Bun.spawnSync(["mkfifo", join(ws.src, "fifo")])
    const problems = await refused({
      root: ws.root,
      readOnly: [ws.src, join(ws.src, "key"), join(ws.src, "pg"), join(ws.src, "fifo")],
      outDir: ws.out
    })
    expect(problems).toContain("workspace.readOnly.1: is or contains the server's secret key file")
    expect(problems).toContain("workspace.readOnly.2: is inside the server's data directory")
    expect(problems).toContain("workspace.readOnly.3: is not a file or directory")
  })

  test("`<data>/workspaces/../data`, trailing slashes, `//`, `.` segments", async () => {
    const ws = createWorkspace()
    const problems = await refused({
      root: `${ws.root}//`,
      readOnly: [`${roots}/../data/`, `${roots}//..//secret.key`, `${roots}/./../.`],
      outDir: `${ws.out}/`
    })
    expect(problems).toContain("workspace.readOnly.0: is inside the server's data directory")
    expect(problems).toContain("workspace.readOnly.1: is or contains the server's secret key file")
    expect(problems).toContain("workspace.readOnly.2: is or contains the server's data directory")
    expect(problems.some((p) => p.startsWith("workspace.root") || p.startsWith("workspace.outDir"))).toBe(false)
  })

  test("a Unicode look-alike of the data dir, and an over-long path: refused as missing, not resolved elsewhere", async () => {
    const ws = createWorkspace()
    const lookalike = join(roots, "..", "dаta") // Cyrillic а
    const long = `${ws.root}/${"a".repeat(5000)}`
    const problems = await refused({ root: ws.root, readOnly: [lookalike, long], outDir: ws.out })
    expect(problems.filter((p) => p.startsWith("workspace.readOnly.0")).join(" ")).toContain("does not exist")
    expect(problems.filter((p) => p.startsWith("workspace.readOnly.1")).length).toBeGreaterThan(0)
  })

  test("another job's workspace in the same job roots is readable: every agents.manage user shares the job roots (by design)", async () => {
    const mine = createWorkspace()
    const theirs = createWorkspace()
    const r = await api.request("POST", "/api/jobs", {
      token: api.manager.token,
      json: body({ root: roots, readOnly: [mine.src, theirs.root], outDir: mine.out })
    })
    expect(r.status).toBe(201)
    await api.sql("DELETE FROM runtime.job")
  })
})
