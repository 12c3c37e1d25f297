/**
 * Job roots below the API: the configuration rules at start-up, the job child's own check of the
 * envelope's `boundary` (and a standalone envelope without one), and commitOutputs refusing a git work
 * tree outside the job roots — the "committed into the server's own checkout".
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { boundaryProblems } from "../../src/tools/workspaceBoundary.ts"
import { commitOutputs } from "../../src/worker/commitOutputs.ts"
import { configuredBoundary, INSTALL_DIR } from "../../src/worker/JobRoots.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild } from "../support/jobChild.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"

setDefaultTimeout(30_000)

const base = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-jobroots-")))
afterAll(() => rmSync(base, { recursive: true, force: true }))
let n = 0
const dir = (...parts: Array<string>) => {
  const p = join(base, `t${++n}`, ...parts)
  mkdirSync(p, { recursive: true })
  return p
}

const configError = async (options: Parameters<typeof configuredBoundary>[0]) => {
  const r = await Effect.runPromise(Effect.flip(configuredBoundary(options)))
  expect(r._tag).toBe("JobRootsInvalid")
  return r.message
}

describe("KINTSUGI_JOB_ROOTS at start-up", () => {
  test("the default <data dir>/workspaces is created and is a carve-out of the data dir; the rest of the data dir stays forbidden", async () => {
    const dataDir = dir("state")
    const b = await Effect.runPromise(configuredBoundary({ dataDir, jobRoots: undefined }))
    expect(existsSync(join(dataDir, "workspaces"))).toBe(true)
    expect(b.jobRoots).toEqual([join(dataDir, "workspaces")])
    const ws = join(dataDir, "workspaces", "proj")
    mkdirSync(ws)
    expect(boundaryProblems(b, "workspace.root", ws)).toEqual([])
    expect(boundaryProblems(b, "workspace.root", join(dataDir, "data")).map((p) => p.message)).toEqual([
      "resolves outside the job roots (symbolic links followed)",
      "is inside the server's data directory"
    ])
    expect(boundaryProblems(b, "workspace.readOnly.1", join(dataDir, "secret.key")).map((p) => p.message)).toContain(
      "is or contains the server's secret key file"
    )
  })

  test("a root that is, contains or lies inside a forbidden path, or does not exist, is a configuration error naming it", async () => {
    const dataDir = dir("state")
    expect(await configError({ dataDir, jobRoots: dataDir })).toContain("is or contains the server's data directory")
    expect(await configError({ dataDir, jobRoots: `${dir("ok")}:/` })).toContain("KINTSUGI_JOB_ROOTS: / is or contains")
    expect(await configError({ dataDir, jobRoots: join(INSTALL_DIR, "src") })).toContain("is inside the server's installation directory")
    mkdirSync(join(dataDir, "data"))
    expect(await configError({ dataDir, jobRoots: join(dataDir, "data") })).toContain("is inside the server's data directory")
    expect(await configError({ dataDir, jobRoots: join(base, "missing") })).toContain("is not an existing directory")
    const fine = dir("roots")
    const b = await Effect.runPromise(configuredBoundary({ dataDir, jobRoots: `${fine}::` }))
    expect(b.jobRoots).toEqual([fine])
  })
})

describe("the job child and the envelope's boundary", () => {
  const provider = createProvider(
    { baseUrl: "http://127.0.0.1:9/v1", requests: [], append: () => undefined, remaining: () => 0, stop: async () => undefined },
    "openai-completions"
  )

  test("a boundary that excludes the workspace → exit 2, job.refused naming each path, no other event", async () => {
    const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
    const forbidden = dir("state")
    symlinkSync(forbidden, join(dirs.src, "state"))
    const job = createJob(dirs)
    const envelope = {
      ...createEnvelope({ ...job, workspace: { ...job.workspace, readOnly: [dirs.src, join(dirs.src, "state")] } }, [provider]),
      boundary: { jobRoots: [dir("roots")], forbidden: [forbidden] }
    }
    const run = await runJobChild(envelope)
    expect(run.code).toBe(2)
    expect(run.lines.length).toBe(1)
    const refusal = JSON.parse(run.lines[0] ?? "{}") as { type: string; problems: Array<{ path: string; message: string }> }
    expect(refusal.type).toBe("job.refused")
    const at = (path: string) => refusal.problems.filter((p) => p.path === path).map((p) => p.message)
    expect(at("job.workspace.root")).toEqual(["resolves outside the job roots (symbolic links followed)"])
    expect(at("job.workspace.outDir")).toEqual(["resolves outside the job roots (symbolic links followed)"])
    expect(at("job.workspace.readOnly.0")).toEqual(["resolves outside the job roots (symbolic links followed)"])
    expect(at("job.workspace.readOnly.1")).toEqual([
      "resolves outside the job roots (symbolic links followed)",
      "is or contains a path reserved for the server"
    ])
    expect(run.stdout).not.toContain(forbidden)
  })

  test("a boundary that holds the workspace → the job runs; the same job without `boundary` (standalone run-job) runs as before", async () => {
    const server = await startOpenAIServer([
      { kind: "turn", text: "First.", usage: { input: 10, output: 2 } },
      { kind: "turn", text: "Second.", usage: { input: 10, output: 2 } }
    ])
    try {
      const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
      const envelope = createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")])
      const bounded = await runJobChild({ ...envelope, boundary: { jobRoots: [dirs.root], forbidden: [dir("state")] } })
      expect({ code: bounded.code, last: bounded.events.at(-1)?.type }).toEqual({ code: 0, last: "job.completed" })
      // Outside every job root we know of, and no boundary: the caller is trusted with its own envelope.
      const free = await runJobChild(envelope)
      expect({ code: free.code, last: free.events.at(-1)?.type }).toEqual({ code: 0, last: "job.completed" })
    } finally {
      await server.stop()
    }
  })

  test("a malformed boundary is a refusal, not ignored", async () => {
    const dirs = createJobDirs()
    const run = await runJobChild({
      ...createEnvelope(createJob(dirs), [provider]),
      boundary: { jobRoots: ["relative/root"], forbidden: [] }
    })
    expect(run.code).toBe(2)
    expect(run.stdout).toContain("boundary.jobRoots.0")
  })
})

describe("commitOutputs and the job roots", () => {
  const git = (cwd: string, ...args: Array<string>) => {
    const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
      cwd,
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd }
    })
    return new TextDecoder().decode(r.stdout).trim()
  }
  const createRepo = (at: string) => {
    writeFileSync(join(at, "README"), "server\n")
    git(at, "init", "-q")
    git(at, "add", ".")
    git(at, "commit", "-qm", "init")
  }

  test("outDir in a job root inside a repository whose top is outside the job roots → not committed, files left in place", async () => {
    // The attack: the server's own checkout holds the job root; the job wrote into it.
    const checkout = dir("checkout")
    createRepo(checkout)
    const root = join(checkout, "state", "workspaces")
    const out = join(root, "job", "out")
    mkdirSync(out, { recursive: true })
    writeFileSync(join(out, "planted.txt"), "x\n")
    const result = await commitOutputs({ outDir: out, jobRoots: [root], paths: ["planted.txt"], message: "job" })
    expect(result).toBe("not committed: the git work tree is outside the job roots (outputs left in place)")
    expect(git(checkout, "log", "--format=%s")).toBe("init")
    expect(git(checkout, "status", "--porcelain")).toBe("?? state/")
    expect(existsSync(join(out, "planted.txt"))).toBe(true)
  })

  test("a `.git` file inside the job root pointing at a git dir outside → not committed", async () => {
    const checkout = dir("checkout")
    createRepo(checkout)
    const root = dir("roots")
    const out = join(root, "out")
    mkdirSync(out)
    writeFileSync(join(out, ".git"), `gitdir: ${join(checkout, ".git")}\n`)
    writeFileSync(join(out, "planted.txt"), "x\n")
    const result = await commitOutputs({ outDir: out, jobRoots: [root], paths: ["planted.txt"], message: "job" })
    expect(result).toBe("not committed: the git work tree is outside the job roots (outputs left in place)")
    expect(git(checkout, "log", "--format=%s")).toBe("init")
  })

  test("a repository inside the job root → committed", async () => {
    const root = dir("roots")
    const repo = join(root, "repo")
    mkdirSync(join(repo, "out"), { recursive: true })
    createRepo(repo)
    writeFileSync(join(repo, "out", "report.md"), "# Report\n")
    const result = await commitOutputs({ outDir: join(repo, "out"), jobRoots: [root], paths: ["report.md"], message: "job" })
    expect(result).toMatch(/^committed [0-9a-f]{12}$/)
    expect(git(repo, "log", "--format=%s")).toBe("job\ninit")
  })
})
