/**
 * The Landlock mechanism's seccomp rules, each shown by what a hostile job's `shell` would run: another
 * process's limits, priority, scheduling, CPU set and I/O class stay as they were; truncate by path, a
 * new session or group, memfd and SysV IPC are refused; the calls on itself that `prlimit … --` and
 * `nice` make still work. Then the program itself, run by a small BPF interpreter for both architectures.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_RESOURCES } from "../../src/tools/jobResources.ts"
import { buildFilter, jobRules, type SeccompArch } from "../../src/tools/landlock/seccompFilter.ts"
import { createProcessRunner, type ProcessRunnerShape } from "../../src/tools/ProcessRunner.ts"
import { probeLandlock } from "../../src/tools/Sandbox.ts"
import { makeShellTool } from "../../src/tools/shell.ts"
import { isAlive } from "../support/processes.ts"
import { createToolContext, createWorkspaceTree, runToolText, type WorkspaceTree } from "../support/workspace.ts"

setDefaultTimeout(60_000)

const landlock = probeLandlock()
const landlockSkip = landlock._tag === "Landlock" ? undefined : landlock._tag === "Unavailable" ? landlock.reason : "off"

/** Why a test cannot run here (a program it needs is missing), or undefined. */
const missing = (...programs: ReadonlyArray<string>): string | undefined => {
  const absent = programs.filter((p) => !existsSync(`/usr/bin/${p}`) && !existsSync(`/bin/${p}`))
  return absent.length === 0 ? undefined : `${absent.join(", ")} missing`
}
const named = (name: string, skip: string | undefined): string => (skip === undefined ? name : `${name} (skipped: ${skip})`)

/** The fields of /proc/<pid>/stat after the command name: index 0 is field 3 (state). */
const statFields = (pid: number): Array<string> => {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}
const cpuLimit = (pid: number): string | undefined =>
  readFileSync(`/proc/${pid}/limits`, "latin1")
    .split("\n")
    .find((l) => l.startsWith("Max cpu time"))
const niceOf = (pid: number): string | undefined => statFields(pid)[19 - 3]
const policyOf = (pid: number): string | undefined => statFields(pid)[41 - 3]
const cpusOf = (pid: number): string | undefined =>
  readFileSync(`/proc/${pid}/status`, "latin1")
    .split("\n")
    .find((l) => l.startsWith("Cpus_allowed_list"))
const ioClassOf = (pid: number): string => Bun.spawnSync(["ionice", "-p", String(pid)]).stdout.toString()

/** A SysV shared memory segment made by this (unconfined) process through perl: its id. */
const createSegment = (): number => {
  const r = Bun.spawnSync([
    "perl",
    "-e",
    "use IPC::SysV qw(IPC_PRIVATE IPC_CREAT S_IRWXU); print shmget(IPC_PRIVATE, 4096, IPC_CREAT|S_IRWXU) // die $!"
  ])
  const id = Number(r.stdout.toString())
  if (r.exitCode !== 0 || !Number.isInteger(id)) throw new Error(`shmget: ${r.stderr.toString()}`)
  return id
}
const segmentExists = (id: number): boolean =>
  readFileSync("/proc/sysvipc/shm", "latin1")
    .split("\n")
    .some((l) => l.trim().split(/\s+/)[1] === String(id))

describe.skipIf(landlockSkip !== undefined)(named("Landlock seccomp rules", landlockSkip), () => {
  let tree: WorkspaceTree
  let tmpDir: string
  let runner: ProcessRunnerShape
  let witness: Bun.Subprocess
  let pid: number
  const KEPT = "the server's file\n"
  const shell = (command: string) =>
    runToolText(makeShellTool(runner), { command, timeoutSec: 30 }, createToolContext(tree.workspace, 600_000).ctx)

  beforeAll(async () => {
    tree = await createWorkspaceTree({}, { outsideFiles: { "keep.txt": KEPT } })
    tmpDir = mkdtempSync(join(tmpdir(), "kintsugi-job-"))
    runner = createProcessRunner(
      landlock._tag === "Landlock"
        ? {
            landlock: { bun: landlock.bun, script: landlock.script, workspace: tree.workspace },
            tmpDir,
            resources: DEFAULT_RESOURCES,
            outDir: tree.out
          }
        : {}
    )
    // Stands in for the serving process: same user, outside the job, without capabilities as a server not
    // run as root has them. (The kernel refuses a new nice, scheduling or I/O class for a process whose
    // capabilities the caller lacks, so a root witness would hide a missing rule.)
    const bare = process.getuid?.() === 0 && missing("setpriv") === undefined ? ["setpriv", "--inh-caps=-all", "--bounding-set=-all"] : []
    witness = Bun.spawn([...bare, "sleep", "600.0917"])
    pid = witness.pid
  })
  afterAll(async () => {
    await Effect.runPromise(runner.killAll)
    witness.kill("SIGKILL")
    rmSync(tmpDir, { recursive: true, force: true })
    await tree.cleanup()
  })

  test.skipIf(missing("prlimit") !== undefined)(
    named("another process's CPU limit cannot be lowered: prlimit --pid fails, the witness lives on with its limit", missing("prlimit")),
    async () => {
      const before = cpuLimit(pid)
      const out = await shell(`prlimit --pid ${pid} --cpu=1:1 && echo CHANGED`)
      expect(out).toContain("Operation not permitted")
      expect(out).not.toContain("CHANGED")
      expect(isAlive(pid)).toBe(true)
      expect(cpuLimit(pid)).toBe(before)
    }
  )

  test.skipIf(missing("renice") !== undefined)(
    named("renice: not another process, nor the caller's group by who 0", missing("renice")),
    async () => {
      const before = niceOf(pid)
      const out = await shell(`renice -n 19 -p ${pid} && echo CHANGED; renice -n 19 -g 0 && echo GROUP`)
      expect(out.match(/Operation not permitted/g)?.length).toBe(2)
      expect(out).not.toMatch(/CHANGED|GROUP/)
      expect(niceOf(pid)).toBe(before)
    }
  )

  test.skipIf(missing("taskset") !== undefined)(named("taskset: another process's CPU set stays", missing("taskset")), async () => {
    const before = cpusOf(pid)
    const out = await shell(`taskset -p 1 ${pid} && echo CHANGED`)
    expect(out).toContain("Operation not permitted")
    expect(out).not.toContain("CHANGED")
    expect(cpusOf(pid)).toBe(before)
  })

  test.skipIf(missing("chrt") !== undefined)(named("chrt: another process cannot be made SCHED_IDLE", missing("chrt")), async () => {
    const before = policyOf(pid)
    const out = await shell(`chrt -i -p 0 ${pid} && echo CHANGED`)
    expect(out).toContain("Operation not permitted")
    expect(out).not.toContain("CHANGED")
    expect(policyOf(pid)).toBe(before)
  })

  test.skipIf(missing("ionice") !== undefined)(
    named("ionice: another process's I/O class stays; not the caller's group by who 0 either", missing("ionice")),
    async () => {
      const before = ioClassOf(pid)
      const out = await shell(`ionice -c 3 -p ${pid} && echo CHANGED; ionice -c 3 -P 0 && echo GROUP`)
      expect(out.match(/Operation not permitted/g)?.length).toBe(2)
      expect(out).not.toMatch(/CHANGED|GROUP/)
      expect(ioClassOf(pid)).toBe(before)
    }
  )

  const selfTools = missing("prlimit", "nice", "ionice", "taskset", "chrt")
  test.skipIf(selfTools !== undefined)(
    named("the same calls on the caller itself still work: prlimit --, ulimit, nice, ionice, taskset, chrt", selfTools),
    async () => {
      const out = await shell(
        "prlimit --cpu=5 -- true && ulimit -S -t 100 && nice -n 5 true && ionice -c 3 true && taskset 1 true && chrt -i 0 true && echo ok"
      )
      expect(out).toBe("exit code: 0\nok\n")
    }
  )

  test.skipIf(missing("perl") !== undefined)(
    named("truncate(2) by path is refused: a file of the server's user keeps its content", missing("perl")),
    async () => {
      const file = join(tree.outside, "keep.txt")
      const out = await shell(`perl -e 'truncate("${file}", 0) or die "$!\\n"' && echo EMPTIED`)
      expect(out).toContain("Operation not permitted")
      expect(out).not.toContain("EMPTIED")
      expect(readFileSync(file, "utf8")).toBe(KEPT)
    }
  )

  test.skipIf(missing("setsid", "perl") !== undefined)(
    named("no new session or process group: setsid and setpgid fail", missing("setsid", "perl")),
    async () => {
      // `; echo` makes bash fork: setsid is then no group leader and calls setsid() itself, without a fork of its own.
      const out = await shell(`setsid sleep 1; echo "setsid $?"; perl -e 'setpgrp(0, 0) or die "setpgid: $!\\n"' && echo NEW-GROUP`)
      expect(out).toMatch(/setsid.*Operation not permitted/)
      expect(out).toContain("setsid 1\n")
      expect(out).toContain("setpgid: Operation not permitted")
      expect(out).not.toContain("NEW-GROUP")
    }
  )

  test.skipIf(missing("python3") !== undefined)(named("memfd_create is refused", missing("python3")), async () => {
    const out = await shell(`python3 -c 'import os; os.memfd_create("x")' && echo CREATED`)
    expect(out).toContain("PermissionError: [Errno 1] Operation not permitted")
    expect(out).not.toContain("CREATED")
  })

  test.skipIf(missing("perl") !== undefined)(
    named("SysV IPC: no shared memory, queue or semaphore set is made", missing("perl")),
    async () => {
      const perl = (get: string) => `perl -e 'use IPC::SysV qw(IPC_PRIVATE IPC_CREAT S_IRWXU); defined(${get}) or die "$!\\n"' && echo MADE`
      const out = await shell(
        [
          perl("shmget(IPC_PRIVATE, 1<<20, IPC_CREAT|S_IRWXU)"),
          perl("msgget(IPC_PRIVATE, IPC_CREAT|S_IRWXU)"),
          perl("semget(IPC_PRIVATE, 1, IPC_CREAT|S_IRWXU)")
        ].join("; ")
      )
      expect(out.match(/^Operation not permitted$/gm)?.length).toBe(3)
      expect(out).not.toContain("MADE")
    }
  )

  test.skipIf(missing("perl") !== undefined)(
    named("SysV IPC: a segment of the server's user can be neither attached nor removed by its id", missing("perl")),
    async () => {
      const id = createSegment()
      try {
        const out = await shell(
          `perl -e 'shmread(${id}, my $b, 0, 16) or die "shmat: $!\\n"' && echo READ; perl -e 'use IPC::SysV qw(IPC_RMID); shmctl(${id}, IPC_RMID, 0) or die "shmctl: $!\\n"' && echo REMOVED`
        )
        expect(out).toContain("shmat: Operation not permitted")
        expect(out).toContain("shmctl: Operation not permitted")
        expect(out).not.toMatch(/READ|REMOVED/)
        expect(segmentExists(id)).toBe(true)
      } finally {
        Bun.spawnSync(["perl", "-e", `use IPC::SysV qw(IPC_RMID); shmctl(${id}, IPC_RMID, 0)`])
      }
    }
  )

  test.skipIf(missing("perl", "unshare") !== undefined)(
    named("the earlier rules hold: no socket, no user namespace by unshare or by clone", missing("perl", "unshare")),
    async () => {
      const clone = process.arch === "arm64" ? 220 : 56
      // CLONE_NEWUSER | SIGCHLD; the child, had there been one, exits at once.
      const out = await shell(
        [
          `perl -e 'use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\\n"' && echo SOCKET`,
          "unshare -U true && echo UNSHARED",
          `perl -e '$r = syscall(${clone}, 0x10000011, 0, 0, 0, 0); exit 0 if $r == 0; $r > 0 or die "clone: $!\\n"; waitpid($r, 0); print "CLONED\\n"'`
        ].join("; ")
      )
      expect(out).toContain("socket: Permission denied")
      expect(out).toMatch(/unshare.*Operation not permitted/)
      expect(out).toContain("clone: Operation not permitted")
      expect(out).not.toMatch(/SOCKET|UNSHARED|CLONED/)
    }
  )
})

// The program as the kernel runs it: seccomp_data is nr, arch, instruction_pointer, args[6] (little-endian).
const ALLOW = 0x7fff0000
const KILL_PROCESS = 0x80000000
const errno = (n: number) => 0x00050000 | n
const EPERM = errno(1)
const EACCES = errno(13)
const ENOSYS = errno(38)
const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 }

/** The action `prog` returns for one call: loads, JEQ/JSET/JGE and RET only, as the builder emits; a jump past the end throws. */
const runFilter = (prog: Uint8Array, arch: number, nr: number, args: ReadonlyArray<bigint> = []): number => {
  const data = new DataView(new ArrayBuffer(64))
  data.setUint32(0, nr, true)
  data.setUint32(4, arch, true)
  args.forEach((a, i) => data.setBigUint64(16 + 8 * i, a, true))
  const code = new DataView(prog.buffer, prog.byteOffset, prog.byteLength)
  let acc = 0
  for (let pc = 0; pc < prog.length / 8; ) {
    const [op, jt, jf, k] = [
      code.getUint16(pc * 8, true),
      code.getUint8(pc * 8 + 2),
      code.getUint8(pc * 8 + 3),
      code.getUint32(pc * 8 + 4, true)
    ]
    pc += 1
    if (op === 0x20) acc = data.getUint32(k, true)
    else if (op === 0x15) pc += acc === k ? jt : jf
    else if (op === 0x45) pc += (acc & k) !== 0 ? jt : jf
    else if (op === 0x35) pc += acc >= k ? jt : jf
    else if (op === 0x06) return k
    else throw new Error(`opcode ${op} at ${pc - 1}`)
  }
  throw new Error("the program ran past its end")
}

// From the kernel's tables (asm/unistd_64.h; asm-generic/unistd.h for arm64), independently of the builder's.
const NR = {
  x64: {
    read: 0,
    socket: 41,
    clone: 56,
    prlimit64: 302,
    setpriority: 141,
    sched_setaffinity: 203,
    sched_setattr: 314,
    ioprio_set: 251,
    truncate: 76,
    setsid: 112,
    setpgid: 109,
    memfd_create: 319,
    shmget: 29,
    semop: 65
  },
  arm64: {
    read: 63,
    socket: 198,
    clone: 220,
    prlimit64: 261,
    setpriority: 140,
    sched_setaffinity: 122,
    sched_setattr: 274,
    ioprio_set: 30,
    truncate: 45,
    setsid: 157,
    setpgid: 154,
    memfd_create: 279,
    shmget: 194,
    semop: 193
  }
} as const

const HIGH = 1n << 32n
const OTHER_PID = 4242n

for (const arch of ["x64", "arm64"] as const) {
  describe(`the job filter's program on ${arch}`, () => {
    const prog = buildFilter(arch, jobRules)
    const nr = NR[arch]
    const run = (n: number, args?: ReadonlyArray<bigint>) => runFilter(prog, AUDIT_ARCH[arch], n, args)

    test("pid 0 passes; another pid, or 0 in the low word only, is EPERM", () => {
      for (const call of ["prlimit64", "sched_setaffinity", "sched_setattr"] as const) {
        expect([run(nr[call], [0n]), run(nr[call], [OTHER_PID]), run(nr[call], [HIGH])]).toEqual([ALLOW, EPERM, EPERM])
      }
    })

    test("setpriority passes only as (PRIO_PROCESS, 0); ioprio_set only as (IOPRIO_WHO_PROCESS, 0)", () => {
      const prio = [
        [0n, 0n],
        [0n, OTHER_PID],
        [1n, 0n],
        [2n, 0n],
        [HIGH, 0n],
        [0n, HIGH]
      ].map((args) => run(nr.setpriority, args))
      expect(prio).toEqual([ALLOW, EPERM, EPERM, EPERM, EPERM, EPERM])
      const io = [
        [1n, 0n],
        [1n, OTHER_PID],
        [2n, 0n],
        [3n, 0n],
        [HIGH | 1n, 0n],
        [1n, HIGH]
      ].map((args) => run(nr.ioprio_set, args))
      expect(io).toEqual([ALLOW, EPERM, EPERM, EPERM, EPERM, EPERM])
    })

    test("truncate, setsid, setpgid, memfd_create and SysV IPC are EPERM with any arguments", () => {
      for (const call of ["truncate", "setsid", "setpgid", "memfd_create", "shmget", "semop"] as const) {
        expect([run(nr[call]), run(nr[call], [1n, 2n])]).toEqual([EPERM, EPERM])
      }
    })

    test("the earlier rules: socket EACCES, clone EPERM only with a namespace flag; other calls pass; other architectures die", () => {
      expect(run(nr.socket, [1n])).toBe(EACCES)
      expect([run(nr.clone, [0x11n]), run(nr.clone, [0x10000011n])]).toEqual([ALLOW, EPERM])
      expect(run(nr.read, [0n])).toBe(ALLOW)
      expect(runFilter(prog, 0x40000003, nr.read)).toBe(KILL_PROCESS)
      if (arch === "x64") expect(run(0x40000000 | nr.read)).toBe(ENOSYS)
    })
  })
}
