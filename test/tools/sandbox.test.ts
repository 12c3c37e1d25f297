/**
 * The process sandbox: the mode and probe, the refusal reasons, the bwrap argv, and (with a real
 * bubblewrap; skipped with the reason when it does not work here) what a command inside can reach.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { createProcessRunner, type ProcessRunnerShape, type RunRequest } from "../../src/tools/ProcessRunner.ts"
import {
  closeMountHandles,
  makeSandbox,
  openMountHandles,
  processToolRefusal,
  sandboxConfigFromEnv,
  sandboxViewPath,
  forgetProbes,
  probeBwrap,
  SAFE_PATH,
  SANDBOX_PROBED_ENV,
  startProbe,
  startProbeFromEnv,
  workspaceMounts
} from "../../src/tools/Sandbox.ts"
import { pendingProbe } from "../../src/tools/sandboxProbe.ts"
import { makeGitTool } from "../../src/tools/git.ts"
import { makeShellTool } from "../../src/tools/shell.ts"
import { pidsWithArg } from "../support/processes.ts"
import { DEFAULT_RESOURCES, lowerResources } from "../../src/tools/jobResources.ts"
import { BWRAP_SKIP_REASON, bwrapWorks, landlockWorks } from "../support/sandbox.ts"
import { createToolContext, createWorkspaceTree, runToolText, type WorkspaceTree } from "../support/workspace.ts"

setDefaultTimeout(30_000)

describe("sandbox mode and refusals", () => {
  test("KINTSUGI_SANDBOX: default auto, the four modes, anything else fails closed naming the value", async () => {
    const mode = (env: Record<string, string>) => {
      const { resources: _resources, ...rest } = sandboxConfigFromEnv(env)
      return rest
    }
    expect(mode({})).toEqual({ mode: "auto" })
    expect(mode({ KINTSUGI_SANDBOX: "OFF" })).toEqual({ mode: "off" })
    expect(mode({ KINTSUGI_SANDBOX: "bwrap" })).toEqual({ mode: "bwrap" })
    expect(mode({ KINTSUGI_SANDBOX: "landlock" })).toEqual({ mode: "landlock" })
    expect(mode({ KINTSUGI_SANDBOX: "off", KINTSUGI_ALLOW_UNCONFINED_ROOT: "1" })).toEqual({ mode: "off", unconfinedRoot: "allow" })
    expect(mode({ KINTSUGI_SANDBOX: "auto", KINTSUGI_ALLOW_UNCONFINED_ROOT: "1" })).toEqual({ mode: "auto" })
    const bogus = sandboxConfigFromEnv({ KINTSUGI_SANDBOX: "nope" })
    expect(mode({ KINTSUGI_SANDBOX: "nope" })).toEqual({ mode: "bwrap", invalidValue: "nope" })
    const status = await Effect.runPromise(makeSandbox(bogus).status)
    expect(status).toEqual({ _tag: "Unavailable", reason: 'KINTSUGI_SANDBOX="nope" is not one of auto, bwrap, landlock, off' })
  })

  test("job resource variables: defaults, a job lowers but never raises them, a bad value refuses process tools naming it", async () => {
    expect(sandboxConfigFromEnv({}).resources).toEqual(DEFAULT_RESOURCES)
    const set = sandboxConfigFromEnv({
      KINTSUGI_JOB_MEMORY_MB: "512",
      KINTSUGI_JOB_PROCESSES: "64",
      KINTSUGI_JOB_TMP_MB: "32",
      KINTSUGI_JOB_OUTDIR_MB: "100",
      KINTSUGI_JOB_CPU_SEC: "20"
    })
    expect(set.resources).toEqual({ memoryMb: 512, processes: 64, tmpMb: 32, outDirMb: 100, cpuSec: 20 })
    expect(lowerResources(DEFAULT_RESOURCES, { memoryMb: 4096, processes: 8 })).toEqual({ ...DEFAULT_RESOURCES, processes: 8 })
    for (const bad of ["lots", "-1", "0", "1.5", "99999999"]) {
      const config = sandboxConfigFromEnv({ KINTSUGI_JOB_MEMORY_MB: bad })
      const refusal = await Effect.runPromise(makeSandbox(config).refusal)
      expect(refusal).toContain(`KINTSUGI_JOB_MEMORY_MB=${JSON.stringify(bad)} is not a whole number`)
    }
  })

  test("auto falls back to Landlock where bubblewrap cannot run; neither working makes auto unavailable naming both", async () => {
    const fallback = await Effect.runPromise(makeSandbox({ mode: "auto", bwrap: "/nonexistent/bwrap" }).status)
    expect(fallback._tag).toBe(landlockWorks() ? "Landlock" : "Unavailable")
    const neither = makeSandbox({ mode: "auto", bwrap: "/nonexistent/bwrap", landlock: "/nonexistent/confineExec.ts" })
    const status = await Effect.runPromise(neither.status)
    expect(status._tag).toBe("Unavailable")
    expect(status._tag === "Unavailable" ? status.reason : "").toMatch(/^bubblewrap .*; Landlock does not work here/)
    const forced = await Effect.runPromise(makeSandbox({ mode: "landlock", landlock: "/nonexistent/confineExec.ts" }).refusal)
    expect(forced).toContain("Landlock does not work here")
  })

  test("a bubblewrap that cannot run makes bwrap unavailable, with the reason; off never probes", async () => {
    for (const mode of ["bwrap"] as const) {
      const sandbox = makeSandbox({ mode, bwrap: "/nonexistent/bwrap" })
      const status = await Effect.runPromise(sandbox.status)
      expect(status._tag).toBe("Unavailable")
      const refusal = await Effect.runPromise(sandbox.refusal)
      expect(refusal).toContain("needs the process sandbox, which is not available")
      expect(refusal).toContain("KINTSUGI_SANDBOX=off")
    }
    expect(await Effect.runPromise(makeSandbox({ mode: "off", bwrap: "/nonexistent/bwrap" }).status)).toEqual({ _tag: "Off" })
  })

  /** A stand-in bubblewrap that notes each run in `log`, takes 200 ms, and exits with `code`. */
  const fakeBwrap = (code: number): { readonly exe: string; readonly runs: () => number; readonly cleanup: () => void } => {
    const dir = join(tmpdir(), `kintsugi-fake-bwrap-${process.pid}-${Math.random().toString(16).slice(2)}`)
    mkdirSync(dir)
    const exe = join(dir, "bwrap")
    const log = join(dir, "runs")
    writeFileSync(
      exe,
      `#!/bin/sh\necho run >> '${log}'\nsleep 0.2\necho 'bwrap: No permissions to create new namespace' >&2\nexit ${code}\n`,
      { mode: 0o755 }
    )
    return {
      exe,
      runs: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0),
      cleanup: () => rmSync(dir, { recursive: true, force: true })
    }
  }

  test("a probe started ahead (a cold job child's, while its kernel loads) is the one the sandbox waits for: one run, its answer", async () => {
    for (const [code, tag] of [
      [0, "Bwrap"],
      [1, "Unavailable"]
    ] as const) {
      const fake = fakeBwrap(code)
      try {
        startProbe(fake.exe)
        startProbe(fake.exe)
        const sandbox = makeSandbox({ mode: "bwrap", bwrap: fake.exe })
        const [status, refusal] = await Effect.runPromise(Effect.all([sandbox.status, sandbox.refusal], { concurrency: "unbounded" }))
        expect(status._tag).toBe(tag)
        if (tag === "Unavailable") {
          // A sandbox that does not work still refuses the process tools: the probe ran, nothing was assumed.
          expect(status).toMatchObject({ reason: expect.stringContaining("user namespaces are blocked here") })
          expect(refusal).toContain("needs the process sandbox, which is not available")
        }
        expect(await Effect.runPromise(sandbox.status)).toEqual(status)
        expect(fake.runs()).toBe(1)
      } finally {
        fake.cleanup()
      }
    }
  })

  test("a cold child takes the worker's probe answer when it names the binary it would probe (no second probe); any other answer is probed", async () => {
    const bwrap = Bun.which("bwrap", { PATH: SAFE_PATH })
    forgetProbes()
    try {
      if (bwrap !== null) {
        startProbeFromEnv({ [SANDBOX_PROBED_ENV]: bwrap })
        expect(pendingProbe("bwrap")).toBeUndefined()
        expect(probeBwrap("bwrap")).toEqual({ _tag: "Bwrap", bwrap })
        forgetProbes()
      }
      // An answer about another binary (or none) is not taken: the child probes its own.
      startProbeFromEnv({ [SANDBOX_PROBED_ENV]: "/opt/elsewhere/bwrap" })
      const probing = pendingProbe("bwrap")
      expect(probing).toBeDefined()
      await probing
      forgetProbes()
      // Off or an invalid mode: nothing is probed or taken.
      startProbeFromEnv({ KINTSUGI_SANDBOX: "off", [SANDBOX_PROBED_ENV]: bwrap ?? "/usr/bin/bwrap" })
      startProbeFromEnv({ KINTSUGI_SANDBOX: "nonsense", [SANDBOX_PROBED_ENV]: bwrap ?? "/usr/bin/bwrap" })
      expect(pendingProbe("bwrap")).toBeUndefined()
    } finally {
      forgetProbes()
    }
  })

  test("unconfined process tools are refused as root, allowed for other users and for a harness that says so", () => {
    const off = { _tag: "Off" } as const
    expect(processToolRefusal(off, { mode: "off" }, 0)).toContain("would run unconfined as root")
    expect(processToolRefusal(off, { mode: "off" }, 1000)).toBeUndefined()
    expect(processToolRefusal(off, { mode: "off", unconfinedRoot: "allow" }, 0)).toBeUndefined()
    expect(processToolRefusal({ _tag: "Bwrap", bwrap: "/usr/bin/bwrap" }, { mode: "auto" }, 0)).toBeUndefined()
  })

  test("workspace mounts: read-only entries read-only at their own paths, outDir writable, parents first", () => {
    expect(workspaceMounts({ root: "/w", readOnly: ["/w/src", "/w/docs/a.md"], outDir: "/w/out" })).toEqual([
      "--dir",
      "/w",
      "--ro-bind",
      "/w/src",
      "/w/src",
      "--bind",
      "/w/out",
      "/w/out",
      "--ro-bind",
      "/w/docs/a.md",
      "/w/docs/a.md"
    ])
    // A read-only root is itself the mount; outDir elsewhere.
    expect(workspaceMounts({ root: "/w/src", readOnly: ["/w/src"], outDir: "/o" })).toEqual([
      "--bind",
      "/o",
      "/o",
      "--ro-bind",
      "/w/src",
      "/w/src"
    ])
  })

  test("what the sandbox shows at a path: the deepest mount holding it, through its handle; nothing outside the mounts", () => {
    const ws = { root: "/w", readOnly: ["/w/src", "/w/src/vendor"], outDir: "/w/src/out" }
    expect(sandboxViewPath(ws, "/w/src/.git/config")).toBe("/w/src/.git/config")
    // The root itself is an empty directory in the sandbox, and /w/srcx is not /w/src.
    expect(sandboxViewPath(ws, "/w/.git")).toBeUndefined()
    expect(sandboxViewPath(ws, "/w/srcx/a")).toBeUndefined()
    // Handles come in mountSources order: the read-only entries, then outDir.
    const handles = [7, 8, 9]
    expect(sandboxViewPath(ws, "/w/src/.git/config", handles)).toBe("/proc/self/fd/7/.git/config")
    expect(sandboxViewPath(ws, "/w/src/vendor/x", handles)).toBe("/proc/self/fd/8/x")
    expect(sandboxViewPath(ws, "/w/src/out", handles)).toBe("/proc/self/fd/9")
  })
})

describe.skipIf(!bwrapWorks)(bwrapWorks ? "inside the sandbox" : `inside the sandbox (${BWRAP_SKIP_REASON})`, () => {
  const CANARY = `canary-${crypto.randomUUID()}`
  let tree: WorkspaceTree
  let runner: ProcessRunnerShape
  let hostTmpFile: string
  let listener: ReturnType<typeof Bun.serve>
  let witness: Bun.Subprocess
  const shell = (command: string) => runToolText(makeShellTool(runner), { command }, createToolContext(tree.workspace).ctx)

  /**
   * A repository in `repoDir` whose a.txt is committed under a `late` filter attribute (no driver defined
   * yet) and then changed, so a diff would run the driver once a job defines it. Returns host git there and its environment.
   */
  const filteredRepo = (repoDir: string) => {
    const env = { PATH: "/usr/bin:/bin", HOME: tree.root, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" }
    const git = (...args: Array<string>) =>
      Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: repoDir, env })
    mkdirSync(repoDir)
    git("init", "-q")
    writeFileSync(join(repoDir, "a.txt"), "one\n")
    writeFileSync(join(repoDir, ".gitattributes"), "a.txt filter=late\n")
    git("add", ".")
    git("commit", "-qm", "first")
    writeFileSync(join(repoDir, "a.txt"), "one\ntwo\n")
    return { git, env }
  }

  beforeAll(async () => {
    tree = await createWorkspaceTree(
      { "ro/a.txt": "readable\n" },
      { outsideFiles: { "secret.key": CANARY, "pgdata/base/1/16384": `sealed:${CANARY}` } }
    )
    const status = await Effect.runPromise(makeSandbox({ mode: "bwrap" }).status)
    if (status._tag !== "Bwrap") throw new Error("probe changed its answer")
    runner = createProcessRunner({ sandbox: { bwrap: status.bwrap, workspace: tree.workspace } })
    hostTmpFile = join(realpathSync(tmpdir()), `host-tmp-${crypto.randomUUID()}`)
    writeFileSync(hostTmpFile, CANARY)
    listener = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(CANARY) })
    // A process with the canary in its environment, standing in for the serving process.
    witness = Bun.spawn(["sleep", "600.0419"], { env: { PATH: "/usr/bin:/bin", KINTSUGI_ADMIN_PASSWORD: CANARY } })
  })
  afterAll(async () => {
    await Effect.runPromise(runner.killAll)
    witness.kill("SIGKILL")
    await listener.stop(true)
    rmSync(hostTmpFile, { force: true })
    await tree.cleanup()
  })

  test("no host process is visible: /proc lists only the sandbox's own pids", async () => {
    const out = await shell("ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '")
    const pids = out.split("\n")[1]?.trim().split(" ").map(Number) ?? []
    expect(pids.length).toBeGreaterThan(0)
    expect(pids.every((p) => p < 100)).toBe(true)
    expect(pids).not.toContain(witness.pid)
    const environ = await shell(`cat /proc/${witness.pid}/environ /proc/*/environ 2>&1; tr '\\0' '\\n' < /proc/1/environ`)
    expect(environ).not.toContain(CANARY)
  })

  test("files outside the workspace do not exist in the sandbox: the secret key, the database files", async () => {
    const out = await shell(`cat ${tree.outside}/secret.key; cat ${tree.outside}/pgdata/base/1/16384; ls / /home /root /etc 2>&1`)
    expect(out).not.toContain(CANARY)
    expect(out).toContain("No such file or directory")
    expect(out).toStartWith("exit code: ")
  })

  test("no network: a listening loopback port of the host cannot be reached", async () => {
    const out = await shell(`echo > /dev/tcp/127.0.0.1/${listener.port} && echo connected`)
    expect(out).not.toContain("connected")
    expect(out).toMatch(/^exit code: 1\n/)
    // Control: the same line unconfined connects.
    const bare = Bun.spawnSync(["bash", "-c", `echo > /dev/tcp/127.0.0.1/${listener.port} && echo connected`])
    expect(bare.stdout.toString()).toBe("connected\n")
  })

  test("read-only roots are read-only at their own paths; outDir is writable at its own path", async () => {
    expect(await shell(`cat ${tree.ro}/a.txt; cat ro/a.txt`)).toBe("exit code: 0\nreadable\nreadable\n")
    const ro = await shell(`echo x > ${tree.ro}/new.txt`)
    expect(ro).toContain("Read-only file system")
    expect(existsSync(join(tree.ro, "new.txt"))).toBe(false)
    expect(await shell(`echo written > ${tree.out}/made.txt && echo ok`)).toBe("exit code: 0\nok\n")
    expect(readFileSync(join(tree.out, "made.txt"), "utf8")).toBe("written\n")
  })

  test("no capabilities: a read-only root cannot be remounted read-write from inside (also as root)", async () => {
    const out = await shell(
      `grep CapEff /proc/self/status; mount -o remount,rw,bind ${tree.ro} && echo REMOUNTED; echo x > ${tree.ro}/pwned && echo WROTE`
    )
    expect(out).toContain("CapEff:\t0000000000000000")
    expect(out).not.toContain("REMOUNTED")
    expect(out).not.toContain("WROTE")
    expect(existsSync(join(tree.ro, "pwned"))).toBe(false)
  })

  test("/tmp is private both ways", async () => {
    const out = await shell(`cat ${hostTmpFile} 2>&1; ls /tmp; echo inner > /tmp/inner-${CANARY} && echo wrote`)
    expect(out).not.toContain(CANARY)
    expect(out).toContain("wrote")
    expect(existsSync(join(tmpdir(), `inner-${CANARY}`))).toBe(false)
  })

  test("git works on a real repository in a read-only root", async () => {
    const env = { PATH: "/usr/bin:/bin", HOME: tree.root, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" }
    const git = (...args: Array<string>) =>
      Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: tree.ro, env })
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "first commit")
    const repoTree = { ...tree.workspace, root: tree.ro }
    const ctx = createToolContext(repoTree).ctx
    const repoRunner = createProcessRunner({
      sandbox: { bwrap: ((await Effect.runPromise(makeSandbox({ mode: "bwrap" }).status)) as { bwrap: string }).bwrap, workspace: repoTree }
    })
    try {
      const tool = makeGitTool(repoRunner)
      expect(await runToolText(tool, { args: ["status", "--short"] }, ctx)).toBe("exit code: 0\n(no output)")
      expect(await runToolText(tool, { args: ["log", "--format=%s"] }, ctx)).toBe("exit code: 0\nfirst commit\n")
    } finally {
      await Effect.runPromise(repoRunner.killAll)
    }
  })

  test("git reuses its config check through the mount handles, and sees an edit the job made inside the sandbox", async () => {
    const repoDir = join(tree.out, "repo")
    const marker = join(tree.out, "filter-fired")
    const { git } = filteredRepo(repoDir)
    git("update-index", "--refresh")
    const handles = openMountHandles(tree.workspace)
    if (handles === undefined) throw new Error("no mount handles")
    const status = await Effect.runPromise(makeSandbox({ mode: "bwrap" }).status)
    const boxed = createProcessRunner({ sandbox: { bwrap: (status as { bwrap: string }).bwrap, workspace: tree.workspace, handles } })
    let spawned = 0
    const tool = makeGitTool({ ...boxed, run: (req: RunRequest) => (spawned++, boxed.run(req)) })
    const ctx = createToolContext({ ...tree.workspace, root: repoDir }).ctx
    const calls = async (args: Array<string>) => {
      const before = spawned
      const text = await runToolText(tool, { args }, ctx)
      return { text, processes: spawned - before }
    }
    try {
      expect((await calls(["status"])).processes).toBe(2)
      expect((await calls(["status"])).processes).toBe(1)
      // The job defines the driver from inside the sandbox (its outDir is writable there).
      const edit = await runToolText(
        makeShellTool(boxed),
        { command: `printf '[filter "late"]\\n\\tclean = touch ${marker}; cat\\n' >> ${repoDir}/.git/config && echo edited` },
        ctx
      )
      expect(edit).toBe("exit code: 0\nedited\n")
      const diff = await calls(["diff"])
      expect(diff.text).toContain("+two")
      expect(diff.processes).toBe(3)
      expect(existsSync(marker)).toBe(false)
      // Control: plain git on the host runs the filter the job defined.
      git("--no-optional-locks", "diff")
      expect(readdirSync(tree.out)).toContain("filter-fired")
    } finally {
      await Effect.runPromise(boxed.killAll)
      closeMountHandles(handles)
    }
  })

  test("the config check looks through the mount handles: a decoy swapped in at the host path cannot pin a stale check", async () => {
    // Another party (not the job: it only sees the sandbox) moves the outDir away and puts a decoy
    // at its path. The sandbox still shows the original (bound through the handle taken at job start).
    const repoDir = join(tree.out, "swap-repo")
    const { env } = filteredRepo(repoDir)
    const handles = openMountHandles(tree.workspace)
    if (handles === undefined) throw new Error("no mount handles")
    const status = await Effect.runPromise(makeSandbox({ mode: "bwrap" }).status)
    const boxed = createProcessRunner({ sandbox: { bwrap: (status as { bwrap: string }).bwrap, workspace: tree.workspace, handles } })
    const tool = makeGitTool(boxed)
    const ctx = createToolContext({ ...tree.workspace, root: repoDir }).ctx
    const moved = `${tree.out}.moved`
    try {
      renameSync(tree.out, moved)
      mkdirSync(tree.out)
      cpSync(join(moved, "swap-repo"), repoDir, { recursive: true })
      expect(await runToolText(tool, { args: ["status", "--short"] }, ctx)).toContain("a.txt")
      await runToolText(tool, { args: ["status", "--short"] }, ctx)
      // The original's config (what the sandbox shows) gains a filter; the decoy stays as it was.
      appendFileSync(join(moved, "swap-repo", ".git", "config"), `[filter "late"]\n\tclean = touch ${join(tree.out, "swap-fired")}; cat\n`)
      const diff = await runToolText(tool, { args: ["diff"] }, ctx)
      // In the sandbox the outDir path shows the original, now at `moved` on the host.
      expect(existsSync(join(moved, "swap-fired"))).toBe(false)
      expect(diff).toContain("+two")
      // Control: the filter is live for plain git in the original (its marker lands in the decoy here).
      Bun.spawnSync(["git", "--no-optional-locks", "diff"], { cwd: join(moved, "swap-repo"), env })
      expect(existsSync(join(tree.out, "swap-fired"))).toBe(true)
    } finally {
      await Effect.runPromise(boxed.killAll)
      closeMountHandles(handles)
      if (existsSync(moved)) {
        rmSync(tree.out, { recursive: true, force: true })
        renameSync(moved, tree.out)
      }
    }
  })

  test("sleep 1000 & sleep 1000 & wait, 1 s timeout: nothing survives", async () => {
    const out = await runToolText(
      makeShellTool(runner),
      { command: "sleep 1000.0419 & sleep 1000.0419 & wait", timeoutSec: 1 },
      createToolContext(tree.workspace).ctx
    )
    expect(out).toStartWith("timed out after 1s")
    expect(pidsWithArg("1000.0419")).toEqual([])
  })

  test("a clean exit leaves nothing behind: `setsid sleep &` dies with the sandbox, no sweep needed", async () => {
    const out = await runToolText(
      makeShellTool(runner),
      { command: "sleep 1000.0420 & setsid sleep 1000.0420 & (sleep 1000.0420 &) ; echo hi" },
      createToolContext(tree.workspace).ctx
    )
    expect(out).toBe("exit code: 0\nhi\n")
    // Checked at once: the call returned only after its pid namespace was gone.
    expect(pidsWithArg("1000.0420")).toEqual([])
  })

  test("the parent of the workspace holds only the workspace; its siblings do not exist", async () => {
    mkdirSync(join(tree.outside, "sub"), { recursive: true })
    expect(await shell(`ls ${join(tree.root, "..")}`)).toBe(`exit code: 0\n${basename(tree.root)}\n`)
    expect(await shell(`ls ${tree.outside}/sub`)).toStartWith("exit code: 2\n")
  })
})
