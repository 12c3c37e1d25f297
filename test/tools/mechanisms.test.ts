/**
 * What a hostile job's `shell` can reach, and what it can take, under each sandbox mechanism: the
 * rows of docs/security.md's table, run once in bubblewrap and once under Landlock (each skipped, with
 * the reason, where it does not work). Resource limits: memory, processes, temporary space, outDir
 * and CPU time, each reached and named in the result the model gets.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_RESOURCES, type JobResources } from "../../src/tools/jobResources.ts"
import { createProcessRunner, type ProcessRunnerShape, type RunnerOptions } from "../../src/tools/ProcessRunner.ts"
import { openMountHandles, probeBwrap, probeLandlock } from "../../src/tools/Sandbox.ts"
import { makeShellTool } from "../../src/tools/shell.ts"
import { pidsWithArg } from "../support/processes.ts"
import { createToolContext, createWorkspaceTree, runToolText, type WorkspaceTree } from "../support/workspace.ts"

setDefaultTimeout(120_000)

interface Mechanism {
  readonly name: "bubblewrap" | "Landlock"
  /** Why it is skipped here, or undefined when it works. */
  readonly skip: string | undefined
  /** The runner's options as the kernel builds them: the workspace bound through handles opened now. */
  readonly options: (tree: WorkspaceTree, tmpDir: string, resources: JobResources) => RunnerOptions
}

const handlesOf = (tree: WorkspaceTree): ReadonlyArray<number> => {
  const handles = openMountHandles(tree.workspace)
  if (handles === undefined) throw new Error("the workspace changed while its handles were opened")
  return handles
}

const bwrap = probeBwrap()
const landlock = probeLandlock()
const MECHANISMS: ReadonlyArray<Mechanism> = [
  {
    name: "bubblewrap",
    skip: bwrap._tag === "Bwrap" ? undefined : bwrap._tag === "Unavailable" ? bwrap.reason : "off",
    options: (tree, tmpDir, resources) => ({
      sandbox: { bwrap: bwrap._tag === "Bwrap" ? bwrap.bwrap : "bwrap", workspace: tree.workspace, handles: handlesOf(tree) },
      tmpDir,
      resources,
      outDir: tree.out
    })
  },
  {
    name: "Landlock",
    skip: landlock._tag === "Landlock" ? undefined : landlock._tag === "Unavailable" ? landlock.reason : "off",
    options: (tree, tmpDir, resources) =>
      landlock._tag === "Landlock"
        ? {
            landlock: { bun: landlock.bun, script: landlock.script, workspace: tree.workspace, handles: handlesOf(tree) },
            tmpDir,
            resources,
            outDir: tree.out
          }
        : {}
  }
]

const MiB = 1024 * 1024

for (const mechanism of MECHANISMS) {
  describe.skipIf(mechanism.skip !== undefined)(
    `${mechanism.name}${mechanism.skip === undefined ? "" : ` (skipped: ${mechanism.skip})`}`,
    () => {
      const CANARY = `canary-${crypto.randomUUID()}`
      let tree: WorkspaceTree
      let tmpDir: string
      let otherJobTmp: string
      let runner: ProcessRunnerShape
      let listener: ReturnType<typeof Bun.serve>
      let witness: Bun.Subprocess
      let hostTmpFile: string
      const shellIn = (r: ProcessRunnerShape, command: string, timeoutSec = 60) =>
        runToolText(makeShellTool(r), { command, timeoutSec }, createToolContext(tree.workspace, 600_000).ctx)
      const shell = (command: string, timeoutSec?: number) => shellIn(runner, command, timeoutSec)
      /** A runner of its own (another job) with `resources` and a fresh temporary directory. */
      const withRunner = async <A>(resources: JobResources, f: (r: ProcessRunnerShape, tmp: string) => Promise<A>): Promise<A> => {
        const tmp = mkdtempSync(join(tmpdir(), "kintsugi-job-"))
        const r = createProcessRunner(mechanism.options(tree, tmp, resources))
        try {
          return await f(r, tmp)
        } finally {
          await Effect.runPromise(r.killAll)
          rmSync(tmp, { recursive: true, force: true })
        }
      }

      beforeAll(async () => {
        tree = await createWorkspaceTree(
          { "ro/a.txt": "readable\n" },
          { outsideFiles: { "secret.key": CANARY, "pgdata/base/1/16384": `sealed:${CANARY}` } }
        )
        tmpDir = mkdtempSync(join(tmpdir(), "kintsugi-job-"))
        otherJobTmp = mkdtempSync(join(tmpdir(), "kintsugi-job-"))
        writeFileSync(join(otherJobTmp, "theirs"), CANARY)
        runner = createProcessRunner(mechanism.options(tree, tmpDir, DEFAULT_RESOURCES))
        hostTmpFile = join(realpathSync(tmpdir()), `host-tmp-${crypto.randomUUID()}`)
        writeFileSync(hostTmpFile, CANARY)
        listener = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(CANARY) })
        // Stands in for the serving process: the canary in its environment, and a process to signal.
        witness = Bun.spawn(["sleep", "600.0713"], { env: { PATH: "/usr/bin:/bin", KINTSUGI_ADMIN_PASSWORD: CANARY } })
      })
      afterAll(async () => {
        await Effect.runPromise(runner.killAll)
        witness.kill("SIGKILL")
        await listener.stop(true)
        for (const p of [hostTmpFile, tmpDir, otherJobTmp]) rmSync(p, { recursive: true, force: true })
        await tree.cleanup()
      })

      test("files outside the workspace cannot be read: the secret key, the database files, the host's /etc", async () => {
        const out = await shell(
          `cat ${tree.outside}/secret.key; cat ${tree.outside}/pgdata/base/1/16384; ls ${tree.outside} /home /root; cat /etc/passwd /etc/hostname`
        )
        expect(out).not.toContain(CANARY)
        expect(out).not.toContain("root:x:0:0")
        expect(out).toMatch(/No such file or directory|Permission denied/)
        expect(out).toStartWith("exit code: ")
      })

      test("the serving process's environment and memory, and other processes, are out of reach: nothing read, nothing signalled", async () => {
        const out = await shell(
          `tr '\\0' '\\n' < /proc/${witness.pid}/environ; head -c 100 /proc/${witness.pid}/mem; cat /proc/*/environ; kill -TERM ${witness.pid} && echo SIGNALLED`
        )
        expect(out).not.toContain(CANARY)
        expect(out).not.toContain("SIGNALLED")
        expect(witness.exitCode).toBeNull()
        expect(witness.killed).toBe(false)
      })

      test("no network: a listening loopback port cannot be reached by TCP, and no UDP datagram reaches the host", async () => {
        const received: Array<string> = []
        let control: () => void = () => undefined
        const controlArrived = new Promise<void>((resolve) => (control = resolve))
        const udp = await Bun.udpSocket({
          hostname: "127.0.0.1",
          socket: {
            data: (_socket, data) => {
              const text = Buffer.from(data).toString()
              received.push(text)
              if (text === "control") control()
            }
          }
        })
        try {
          const out = await shell(
            `echo > /dev/tcp/127.0.0.1/${listener.port} && echo connected; printf from-job > /dev/udp/127.0.0.1/${udp.port}`
          )
          expect(out).not.toContain("connected")
          // Loopback keeps order: had the job's datagram arrived, it would be there before this one.
          udp.send("control", udp.port, "127.0.0.1")
          await controlArrived
          expect(received).toEqual(["control"])
        } finally {
          udp.close()
        }
        // Control: the same line unconfined connects.
        const bare = Bun.spawnSync(["bash", "-c", `echo > /dev/tcp/127.0.0.1/${listener.port} && echo connected`])
        expect(bare.stdout.toString()).toBe("connected\n")
      })

      test("read-only roots are read-only at their own paths; outDir is writable at its own path", async () => {
        expect(await shell(`cat ${tree.ro}/a.txt; cat ro/a.txt`)).toBe("exit code: 0\nreadable\nreadable\n")
        const ro = await shell(
          `echo x > ${tree.ro}/new.txt; mount -o remount,rw,bind ${tree.ro} && echo REMOUNTED; echo x > ${tree.ro}/pwned && echo WROTE`
        )
        expect(ro).toMatch(/Read-only file system|Permission denied/)
        expect(ro).not.toContain("REMOUNTED")
        expect(ro).not.toContain("WROTE")
        expect(existsSync(join(tree.ro, "new.txt"))).toBe(false)
        expect(await shell(`echo written > ${tree.out}/made.txt && echo ok`)).toBe("exit code: 0\nok\n")
        expect(readFileSync(join(tree.out, "made.txt"), "utf8")).toBe("written\n")
      })

      test("a private temporary directory: the host's /tmp and another job's are not reachable; what the job writes stays in its own", async () => {
        const out = await shell(
          `cat ${hostTmpFile} ${otherJobTmp}/theirs; echo mine > "\${TMPDIR:-/tmp}/mine-${CANARY}" && echo wrote; cat "\${TMPDIR:-/tmp}/mine-${CANARY}"`
        )
        // The canary is only the two files' content (no path printed holds it).
        expect(out).not.toContain(CANARY)
        expect(out).toContain("wrote\nmine\n")
        // bubblewrap leaves the mount point of a workspace that lies under /tmp in the directory bound there (empty).
        expect(readdirSync(tmpDir).filter((n) => !n.startsWith("kintsugi-ws-"))).toEqual([`mine-${CANARY}`])
        expect(existsSync(join(tmpdir(), `mine-${CANARY}`))).toBe(false)
        rmSync(join(tmpDir, `mine-${CANARY}`))
      })

      test("nothing survives a call: background processes, double forks that clear their environment or try to leave the session", async () => {
        const tag = `600.${Math.floor(Math.random() * 1e6)}`
        // Under Landlock setsid is refused (every process stays in the call's session); in bubblewrap it runs inside the PID namespace.
        const out = await shell(`sleep ${tag} & (env -i /usr/bin/sleep ${tag}1 &); (setsid env -i /usr/bin/sleep ${tag}2 &); echo started`)
        expect(out).toStartWith("exit code: 0\n")
        expect(out).toContain("started")
        for (const t of [tag, `${tag}1`, `${tag}2`]) expect(pidsWithArg(t)).toEqual([])
      })

      test("memory: a 3 GB string in bash fails naming the memory limit; the job's next call runs", async () => {
        const out = await shell("x=$(head -c 3000000000 /dev/zero | tr '\\0' a); echo ${#x}")
        expect(out).toContain(`memory limit ${DEFAULT_RESOURCES.memoryMb} MiB`)
        expect(out).not.toMatch(/^3000000000$/m)
        expect(await shell("echo still here")).toBe("exit code: 0\nstill here\n")
      })

      test("processes: 2,000 background sleeps stop at the process limit, and none survives", async () => {
        const tag = `700.${Math.floor(Math.random() * 1e6)}`
        const out = await shell(`for i in $(seq 2000); do sleep ${tag} & done; wait`)
        expect(out).toStartWith(`killed: process limit ${DEFAULT_RESOURCES.processes}`)
        expect(pidsWithArg(tag)).toEqual([])
      })

      test("temporary space: writing 2 GB stops at the limit; the directory is emptied", async () => {
        await withRunner({ ...DEFAULT_RESOURCES, tmpMb: 64 }, async (r, tmp) => {
          const out = await shellIn(r, `head -c 2000000000 /dev/zero > "\${TMPDIR:-/tmp}/big"; echo done`)
          expect(out).toContain("temporary space limit 64 MiB")
          expect(readdirSync(tmp)).toEqual([])
        })
      })

      test("temporary space while a call runs: many files each under every per-file limit, then a long wait, are stopped by the watch", async () => {
        await withRunner({ ...DEFAULT_RESOURCES, tmpMb: 16 }, async (r, tmp) => {
          // Without the watch this call would only end at its own timeout (110 s), and its files would stay.
          const out = await shellIn(r, 'for i in $(seq 40); do head -c 1048576 /dev/zero > "${TMPDIR:-/tmp}/f$i"; done; sleep 100', 110)
          expect(out).toStartWith("killed: temporary space limit 16 MiB")
          expect(readdirSync(tmp).filter((n) => !n.startsWith("kintsugi-ws-"))).toEqual([])
        })
      })

      test("outDir: writing 2 GB stops at the limit; what was there before does not count", async () => {
        writeFileSync(join(tree.out, "before.bin"), Buffer.alloc(48 * MiB, 1))
        try {
          // The largest file a process may write is a little over the larger disk limit: the same here, so one file stops at it.
          await withRunner({ ...DEFAULT_RESOURCES, outDirMb: 64, tmpMb: 64 }, async (r) => {
            // 40 MiB fits beside the 48 MiB that were there at the start.
            expect(await shellIn(r, `head -c ${40 * MiB} /dev/zero > ${tree.out}/fits.bin && echo ok`)).toBe("exit code: 0\nok\n")
            const out = await shellIn(r, `head -c 2000000000 /dev/zero > ${tree.out}/big.bin; echo done`)
            expect(out).toContain("output directory limit 64 MiB")
            expect(statSync(join(tree.out, "big.bin")).size).toBeLessThan(100 * MiB)
          })
        } finally {
          for (const f of ["before.bin", "fits.bin", "big.bin"]) rmSync(join(tree.out, f), { force: true })
        }
      })

      test("the workspace configures nothing of the sandbox: a bunfig.toml, tsconfig.json, .env and Bun cache in the root run nothing", async () => {
        const planted = join(tree.root, "planted-ran")
        const files: Record<string, string> = {
          "bunfig.toml": `preload = ["./evil.ts"]\n`,
          "evil.ts": `require("node:fs").writeFileSync(${JSON.stringify(planted)}, "ran")\n`,
          "tsconfig.json": JSON.stringify({ compilerOptions: { baseUrl: ".", paths: { "*": ["./evil.ts"] } } }),
          ".env": "INJECTED_BY_DOTENV=yes\nBASH_ENV=./evil.sh\n",
          "evil.sh": `echo ran > ${planted}\n`
        }
        for (const [name, text] of Object.entries(files)) writeFileSync(join(tree.root, name), text)
        try {
          const out = await shell("env; echo done")
          expect(out).toContain("done")
          expect(out).not.toContain("INJECTED_BY_DOTENV")
          expect(out).not.toContain("BASH_ENV")
          expect(existsSync(planted)).toBe(false)
          // Nothing was written into the workspace root either (Bun's cache, .bun/).
          expect(readdirSync(tree.root).sort()).toEqual([...Object.keys(files), "out", "ro"].sort())
        } finally {
          for (const name of Object.keys(files)) rmSync(join(tree.root, name), { force: true })
        }
      })

      test("a read-only root or outDir swapped for a symlink after the job started grants nothing of its target", async () => {
        const decoy = mkdtempSync(join(tmpdir(), "kintsugi-decoy-"))
        writeFileSync(join(decoy, "secret"), CANARY)
        const other = await createWorkspaceTree({ "ro/a.txt": "theirs\n" })
        try {
          const r = createProcessRunner(mechanism.options(other, mkdtempSync(join(tmpdir(), "kintsugi-job-")), DEFAULT_RESOURCES))
          // Another job (whose outDir holds this workspace) swaps both entries for links to the decoy.
          rmSync(other.ro, { recursive: true })
          symlinkSync(decoy, other.ro)
          rmSync(other.out, { recursive: true })
          symlinkSync(decoy, other.out)
          const out = await runToolText(
            makeShellTool(r),
            { command: `cat ${other.ro}/secret ro/secret; echo x > ${other.out}/planted; echo done`, timeoutSec: 60 },
            createToolContext(other.workspace, 600_000).ctx
          )
          await Effect.runPromise(r.killAll)
          expect(out).not.toContain(CANARY)
          expect(existsSync(join(decoy, "planted"))).toBe(false)
        } finally {
          rmSync(decoy, { recursive: true, force: true })
          await other.cleanup()
        }
      })

      test("CPU time: a busy loop is stopped at the CPU limit, named", async () => {
        await withRunner({ ...DEFAULT_RESOURCES, cpuSec: 1 }, async (r) => {
          const out = await shellIn(r, "while :; do :; done", 120)
          expect(out).toContain("CPU time limit 1 s")
        })
      })

      test("CPU time counts per call: eight busy processes together are killed when their sum passes the limit", async () => {
        const tag = `800.${Math.floor(Math.random() * 1e6)}`
        await withRunner({ ...DEFAULT_RESOURCES, cpuSec: 2 }, async (r) => {
          // Each loop gets a quarter of a core or less here: the sum passes 2 s long before any one process does.
          const out = await shellIn(r, `for i in 1 2 3 4 5 6 7 8; do (exec -a busy${tag} bash -c 'while :; do :; done') & done; wait`, 120)
          expect(out).toStartWith("killed: CPU time limit 2 s")
        })
        expect(pidsWithArg(`busy${tag}`)).toEqual([])
      })

      test.skipIf(!existsSync("/usr/bin/python3"))("threads count toward the process limit", async () => {
        await withRunner({ ...DEFAULT_RESOURCES, processes: 16 }, async (r) => {
          const out = await shellIn(
            r,
            `python3 -c 'import threading, time
ts = [threading.Thread(target=time.sleep, args=(30,)) for _ in range(40)]
[t.start() for t in ts]
[t.join() for t in ts]'`,
            120
          )
          expect(out).toStartWith("killed: process limit 16")
        })
      })
    }
  )
}
