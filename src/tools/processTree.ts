/**
 * Linux `/proc` bookkeeping for the process runner: which processes belong to one run (its process
 * group, its session, every descendant seen through ppid links, every process carrying the run's
 * environment token), and the SIGTERM → grace → SIGKILL sweep over them.
 */
import { dlopen, FFIType, read } from "bun:ffi"
import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs"

export interface ProcStat {
  readonly pid: number
  readonly ppid: number
  readonly pgrp: number
  readonly session: number
  /** R, S, D, T, Z (zombie), X (dead)… */
  readonly state: string
  /** Clock ticks since boot: (pid, startTime) names one process even after its pid is reused. */
  readonly startTime: string
  /** A kernel thread (PF_KTHREAD): no environment, never a member of a run. */
  readonly kernel: boolean
  /** Resident set size, in pages. */
  readonly rss: number
  /** Threads of the process (each one a task, as a cgroup's pids.max counts them). */
  readonly threads: number
  /** CPU time used by the process and its reaped children, in clock ticks (utime + stime + cutime + cstime). */
  readonly cpuTicks: number
}

/** PF_KTHREAD in the flags field of /proc/<pid>/stat. */
const PF_KTHREAD = 0x00200000

/** Reads `/proc/<pid>/stat`; undefined when the process is gone (or was never visible). */
export const readStat = (pid: number | "self"): ProcStat | undefined => {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1")
  } catch {
    return undefined
  }
  // comm (field 2) may contain spaces and parentheses: split after its *last* ")".
  const close = text.lastIndexOf(")")
  const f = text.slice(close + 2).split(" ")
  const num = (i: number) => Number(f[i])
  const pidText = text.slice(0, text.indexOf(" "))
  return {
    pid: Number(pidText),
    state: f[0] ?? "?",
    ppid: num(1),
    pgrp: num(2),
    session: num(3),
    startTime: f[19] ?? "",
    kernel: (num(6) & PF_KTHREAD) !== 0,
    rss: num(21),
    threads: num(17),
    cpuTicks: num(11) + num(12) + num(13) + num(14)
  }
}

/** Zombies and dead entries count as gone: they hold no resources and cannot run again. */
const isLive = (s: ProcStat | undefined): s is ProcStat => s !== undefined && s.state !== "Z" && s.state !== "X"

/** Every process visible in `/proc`, one read of each `stat`; empty when `/proc` cannot be read. */
export const scanProcesses = (): ReadonlyArray<ProcStat> => {
  const out: Array<ProcStat> = []
  let names: Array<string>
  try {
    names = readdirSync("/proc")
  } catch {
    // No /proc (or hidepid): only the process-group kill is left.
    return out
  }
  for (const name of names) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue
    const s = readStat(Number(name))
    if (s !== undefined) out.push(s)
  }
  return out
}

/**
 * Two cheap counters that bound which pids can have been handed out since they were read: forks
 * since boot (`processes` in /proc/stat, every namespace, threads included), the kernel's thread
 * count and the last pid allocated in our pid namespace (both from /proc/loadavg).
 */
export interface PidClock {
  readonly forks: number
  readonly threads: number
  readonly lastPid: number
}

const readNumberAfter = (text: string, key: string): number | undefined => {
  const at = text.indexOf(key)
  if (at < 0) return undefined
  const n = Number.parseInt(text.slice(at + key.length), 10)
  return Number.isFinite(n) ? n : undefined
}

/** Descriptors of the /proc files read on every call, kept open (close-on-exec, as every descriptor we open). */
const procFds = new Map<string, number>()
let procBuffer = Buffer.alloc(16 * 1024)

/**
 * One generation of a /proc file, read through a kept descriptor: a read at offset 0 makes the
 * kernel generate the file afresh, without the path lookup, open and close of a readFileSync (most
 * of its cost). The buffer grows until the whole file fits one read, so no reading mixes two
 * generations. Throws like readFileSync when the file cannot be read.
 */
const readProcFile = (path: string): string => {
  let fd = procFds.get(path)
  if (fd === undefined) {
    fd = openSync(path, "r")
    procFds.set(path, fd)
  }
  try {
    for (;;) {
      const n = readSync(fd, procBuffer, 0, procBuffer.length, 0)
      if (n < procBuffer.length) return procBuffer.toString("latin1", 0, n)
      procBuffer = Buffer.alloc(procBuffer.length * 2)
    }
  } catch (e) {
    procFds.delete(path)
    try {
      closeSync(fd)
    } catch {
      // Already unusable: nothing to release.
    }
    throw e
  }
}

/** The last reading and when it was taken (performance.now()). */
let lastClock: { readonly clock: PidClock; readonly at: number } | undefined
/** How old a reading may be to serve as the "before" of a spawn. */
const CLOCK_REUSE_MS = 1000

/**
 * A PidClock taken before now, for a spawn about to happen: the last reading when it is recent (any
 * reading taken before the spawn bounds the pids handed out since; a recent one keeps the bound
 * tight), else a new one. Saves a read of /proc/stat per call when calls follow each other.
 */
export const pidClockBeforeSpawn = (): PidClock | undefined =>
  lastClock !== undefined && performance.now() - lastClock.at < CLOCK_REUSE_MS ? lastClock.clock : readPidClock()

/** The current PidClock, or undefined when /proc cannot tell (then every sweep scans everything). */
export const readPidClock = (): PidClock | undefined => {
  const at = performance.now()
  try {
    const forks = readNumberAfter(readProcFile("/proc/stat"), "\nprocesses ")
    // "0.20 0.11 0.05 1/143 12345": runnable/threads, then the last pid of our namespace.
    const [, counts = "", last = ""] = readProcFile("/proc/loadavg").trim().split(/\s+/).slice(2)
    const threads = Number(counts.split("/")[1])
    const lastPid = Number(last)
    if (forks === undefined || !Number.isInteger(threads) || !Number.isInteger(lastPid)) return undefined
    const clock = { forks, threads, lastPid }
    lastClock = { clock, at }
    return clock
  } catch {
    return undefined
  }
}

/**
 * pid_max of our namespace, read once: only root can change it (and lowering it is what could make a
 * cached value too large), and process tools never run unconfined as root outside tests.
 */
let pidMaxCache: number | undefined
const pidMax = (): number => {
  if (pidMaxCache === undefined) {
    try {
      pidMaxCache = Number.parseInt(readFileSync("/proc/sys/kernel/pid_max", "latin1"), 10)
    } catch {
      pidMaxCache = Number.NaN
    }
  }
  return pidMaxCache
}
/** Pids below this are never reused once the allocator has wrapped (the kernel's RESERVED_PIDS). */
const RESERVED_PIDS = 300
/** Above this many pids to look at, one readdir of /proc is cheaper than a stat read per pid. */
const DIRECT_PROBE_LIMIT = 16

/**
 * Every live process whose pid lies in [from, to], read from /proc: directly for a short range, via
 * one readdir for a long one.
 */
const processesInRange = (from: number, to: number): ReadonlyArray<ProcStat> => {
  const out: Array<ProcStat> = []
  if (to - from < DIRECT_PROBE_LIMIT) {
    for (let pid = from; pid <= to; pid++) {
      const s = readStat(pid)
      if (s !== undefined) out.push(s)
    }
    return out
  }
  for (const name of readdirSync("/proc")) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid < from || pid > to) continue
    const s = readStat(pid)
    if (s !== undefined) out.push(s)
  }
  return out
}

/** Above this many pids to probe, the group check is skipped (the range scan decides). */
const GROUP_PROBE_LIMIT = 512
const ESRCH = 3

/** libc's kill(2) with its errno, no exception per missing group; null when it cannot be loaded (then the range scan decides). */
let libcKill: ((target: number) => boolean) | null | undefined
const groupProbe = (): ((target: number) => boolean) | null => {
  if (libcKill !== undefined) return libcKill
  libcKill = null
  if (process.platform !== "linux" || (process.arch !== "x64" && process.arch !== "arm64")) return libcKill
  try {
    const lib = dlopen("libc.so.6", {
      kill: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      __errno_location: { args: [], returns: FFIType.ptr }
    })
    // True unless the kernel says no such group (ESRCH): EPERM means it exists.
    libcKill = (group) => {
      if (lib.symbols.kill(-group, 0) === 0) return true
      const errno = lib.symbols.__errno_location()
      return errno === null || read.i32(errno, 0) !== ESRCH
    }
  } catch {
    // No glibc here: the range scan decides.
  }
  return libcKill
}

/**
 * True when no process group with an id in [from, to] exists: kill(-g, 0) fails with ESRCH for
 * each. A group outlives its leader while any member lives, so this holds only when none does.
 */
const noGroupIn = (from: number, to: number): boolean => {
  const probe = groupProbe()
  if (probe === null || to - from >= GROUP_PROBE_LIMIT) return false
  for (let g = from; g <= to; g++) if (probe(g)) return false
  return true
}

const self = readStat("self")
const ownPid = process.pid
const ownPgrp = self?.pgrp ?? ownPid
const ownSession = self?.session ?? ownPid

/** The environment variable every run's processes inherit; sweeping by it catches double forks. */
export const RUN_TOKEN_VAR = "KINTSUGI_RUN"
/** Set by the worker for a job child: every run token of the job starts with it (see sweepRunPrefix). */
export const RUN_PREFIX_VAR = "KINTSUGI_RUN_PREFIX"

/** `{ runTokenPrefix }` when `value` is a well-formed prefix (hex, then "-"), else nothing. */
export const validRunPrefix = (value: string | undefined): { readonly runTokenPrefix?: string } =>
  value !== undefined && /^[0-9a-f]{16,64}-$/.test(value) ? { runTokenPrefix: value } : {}

const hasToken = (pid: number, needle: string, attempts = 3): boolean => {
  // A process caught in the middle of execve shows an empty environment for a moment: look again.
  for (let attempt = 0; attempt < attempts; attempt++) {
    let environ: string
    try {
      environ = readFileSync(`/proc/${pid}/environ`, "latin1")
    } catch {
      return false
    }
    if (environ !== "") return `\0${environ}`.includes(needle)
    if (attempt + 1 < attempts) Bun.sleepSync(2)
  }
  return false
}

const signal = (target: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(target, sig)
  } catch {
    // ESRCH (already gone) and EPERM (not ours to signal) both leave nothing for us to do.
  }
}

/**
 * The processes of one run. Unconfined, `pid` was normally spawned with `detached: true`, so it leads
 * a new session and process group whose ids equal its pid; a sandboxed bwrap and an unconfined git
 * (`newSession: false`) lead neither (their group is the job child's, which `groupIsOurs` never lets
 * be signalled), and are found by pid, descendant links and token.
 */
export class ProcessTree {
  /** pid → startTime of every descendant ever seen. */
  private readonly known = new Map<number, string>()
  private rootStartRead = false
  /** The child was reaped: its pid stays free until the allocator wraps. */
  private exited = false
  private rootStartValue: string | undefined
  private readonly needle: string

  constructor(
    readonly pid: number,
    token: string,
    /** The child was spawned leading a new session and process group (ids equal to `pid`). */
    private readonly leadsGroup = false
  ) {
    this.needle = `\0${RUN_TOKEN_VAR}=${token}\0`
  }

  /**
   * The child's start time, read when first needed rather than at the spawn (reading the stat of a
   * process in the middle of its execve waits for the exec).
   * Undefined when the child was gone before anything needed it (see `childExited`).
   */
  private get rootStart(): string | undefined {
    if (!this.rootStartRead) {
      this.rootStartRead = true
      this.rootStartValue = readStat(this.pid)?.startTime
      if (this.rootStartValue !== undefined) this.known.set(this.pid, this.rootStartValue)
    }
    return this.rootStartValue
  }

  /**
   * Tells the tree that the child was reaped: from now on a process with its pid is someone else's
   * (after a pid wrap), so a start time not read yet stays unknown (and its group is only ours
   * while no process holds that pid).
   */
  childExited(): void {
    this.rootStartRead = true
    this.exited = true
  }

  /** Adds every process whose parent is a known member (transitively); call it often while running. */
  observe(procs: ReadonlyArray<ProcStat>): void {
    const children = new Map<number, Array<ProcStat>>()
    for (const p of procs) {
      const list = children.get(p.ppid)
      if (list === undefined) children.set(p.ppid, [p])
      else list.push(p)
    }
    const byPid = new Map(procs.map((p) => [p.pid, p]))
    void this.rootStart // the child is the first known member (once its start time is read)
    const queue = [...this.known.keys()].filter((pid) => byPid.get(pid)?.startTime === this.known.get(pid))
    while (queue.length > 0) {
      const parent = queue.pop() as number
      for (const c of children.get(parent) ?? []) {
        if (this.known.get(c.pid) === c.startTime) continue
        this.known.set(c.pid, c.startTime)
        queue.push(c.pid)
      }
    }
  }

  /** Live members: known descendants, the session and group (unless they are ours), token carriers. */
  private members(procs: ReadonlyArray<ProcStat>): Array<ProcStat> {
    this.observe(procs)
    const ours = this.groupIsOurs(procs)
    return procs.filter(
      (p) =>
        isLive(p) &&
        p.pid > 1 &&
        p.pid !== ownPid &&
        (this.known.get(p.pid) === p.startTime ||
          (ours && (p.session === this.pid || p.pgrp === this.pid)) ||
          (!p.kernel && this.startedSince(p) && hasToken(p.pid, this.needle)))
    )
  }

  /**
   * What the run's live processes take now: tasks (threads counted), resident memory in pages and CPU
   * time in clock ticks. Members are known descendants and the run's session and group (not token
   * carriers, whose environments a cheap look does not read).
   */
  usage(procs: ReadonlyArray<ProcStat>): { readonly tasks: number; readonly rssPages: number; readonly cpuTicks: number } {
    this.observe(procs)
    const ours = this.groupIsOurs(procs)
    let tasks = 0
    let rssPages = 0
    let cpuTicks = 0
    const count = (n: number) => (Number.isFinite(n) ? n : 0)
    for (const p of procs) {
      if (!isLive(p) || p.pid === ownPid) continue
      if (this.known.get(p.pid) === p.startTime || (ours && (p.session === this.pid || p.pgrp === this.pid))) {
        tasks += Math.max(1, count(p.threads))
        rssPages += count(p.rss)
        cpuTicks += count(p.cpuTicks)
      }
    }
    return { tasks, rssPages, cpuTicks }
  }

  /**
   * True when the run certainly has no member left, found without scanning all of /proc; false when
   * it may have one (then `kill` scans everything, as always). `before` was read just before the
   * spawn. Every member started after our child (descendants, token carriers, and the group and
   * session, which only descendants can join), so its pid was allocated after the child's. Unless the
   * allocator wrapped around since, those pids all lie in [pid, lastPid now]. It cannot have wrapped
   * (and come back above our pid) unless it moved past pid_max - RESERVED_PIDS slots, each either
   * handed out (≤ forks since `before`) or skipped as in use (≤ threads at `before` + forks since):
   * so 2 × forks + threads below that bound, and lastPid ≥ pid, prove no wrap.
   * When the child led its own group, no group with an id in that range proves it without reading
   * a single process: every member is in a group whose id lies there (the child's own, or one a
   * member made with setsid/setpgid, whose id is that member's pid or a group of its session), and a
   * group exists while any member lives. Only when one exists (maybe someone else's) is the range read.
   */
  cleared(before: PidClock | undefined): boolean {
    const now = readPidClock()
    if (before === undefined || now === undefined || now.lastPid < this.pid) return false
    const forks = now.forks - before.forks
    if (!(forks >= 0 && 2 * forks + before.threads < pidMax() - RESERVED_PIDS)) return false
    if (this.leadsGroup && this.exited && noGroupIn(this.pid, now.lastPid)) return true
    let procs: ReadonlyArray<ProcStat>
    try {
      // A reaped child's pid is free, and without a wrap nobody got it since: only later pids can
      // hold a member (none at all, no read, when nothing was forked in the namespace since the child).
      procs = processesInRange(this.exited ? this.pid + 1 : this.pid, now.lastPid)
    } catch {
      return false
    }
    return this.members(procs).length === 0
  }

  /** Only a process started after our child can carry its token; skipping the rest shortens a sweep. */
  private startedSince(p: ProcStat): boolean {
    return this.rootStart === undefined || Number(p.startTime) >= Number(this.rootStart)
  }

  /** Whether `kill(-pid)` may be sent: never our own group, never pid ≤ 1, never a reused pid. */
  private groupIsOurs(procs: ReadonlyArray<ProcStat>): boolean {
    if (this.pid <= 1 || this.pid === ownPgrp || this.pid === ownSession || this.pid === ownPid) return false
    // Once the leader is gone its ids stay reserved while any member lives; a live process with
    // that pid but another start time means the pid was reused and the group is not ours.
    const leader = procs.find((p) => p.pid === this.pid)
    return leader === undefined || (leader.startTime === this.rootStart && leader.pgrp === this.pid)
  }

  private signalAll(sig: NodeJS.Signals): number {
    const procs = scanProcesses()
    const members = this.members(procs)
    if (this.groupIsOurs(procs)) signal(-this.pid, sig)
    for (const m of members) signal(m.pid, sig)
    return members.length
  }

  /**
   * SIGTERM to the group and every member, up to `graceMs` for them to go, then SIGKILL, then up to
   * `reapMs` for the kernel to finish them. Returns the pids still alive at the end (normally none).
   */
  async kill(graceMs: number, reapMs = 2000): Promise<ReadonlyArray<number>> {
    if (this.signalAll("SIGTERM") === 0) return []
    // Date.now(): a plain async kill loop outside any Effect, no fiber to yield to.
    const graceEnd = Date.now() + graceMs
    while (Date.now() < graceEnd) {
      await Bun.sleep(20)
      if (this.members(scanProcesses()).length === 0) return []
    }
    const reapEnd = Date.now() + reapMs
    for (;;) {
      // Repeated: a member may still fork between one SIGKILL pass and the next.
      if (this.signalAll("SIGKILL") === 0) return []
      if (Date.now() >= reapEnd) return this.members(scanProcesses()).map((p) => p.pid)
      await Bun.sleep(10)
    }
  }
}

/**
 * Kills every process whose run token starts with `prefix` (a job's processes, after its job child
 * died: with SIGKILL nobody else sweeps them), repeating until none is left or `reapMs` passed.
 * Only processes started at or after `since` (a startTime in clock ticks) are examined.
 * Returns the pids still alive at the end (normally none).
 */
export const sweepRunPrefix = (prefix: string, since: string | undefined, reapMs = 2000): Promise<ReadonlyArray<number>> => {
  const needle = `\0${RUN_TOKEN_VAR}=${prefix}`
  // One look per process and pass: the sweep passes again every 10 ms, so no pass blocks the serving process on an empty environment.
  return killUntilGone((p) => startedAt(p, since) && hasToken(p.pid, needle, 1), reapMs)
}

/** Whether `p` is a live user process (not ours, not init) started at or after `since` (clock ticks). */
const startedAt = (p: ProcStat, since: string | undefined): boolean =>
  isLive(p) && !p.kernel && p.pid > 1 && p.pid !== ownPid && (since === undefined || Number(p.startTime) >= Number(since))

/**
 * SIGKILL to every process `belongs` picks, again every 10 ms until none is left or `reapMs` passed;
 * the pids still alive then (normally none). A plain async sweep outside any Effect (Date.now, Bun.sleep).
 */
const killUntilGone = async (belongs: (p: ProcStat) => boolean, reapMs: number): Promise<ReadonlyArray<number>> => {
  // Date.now(): a plain async kill loop outside any Effect, no fiber to yield to.
  const end = Date.now() + reapMs
  for (;;) {
    const found = scanProcesses().filter(belongs)
    if (found.length === 0) return []
    if (Date.now() >= end) return found.map((p) => p.pid)
    for (const p of found) signal(p.pid, "SIGKILL")
    await Bun.sleep(10)
  }
}

/**
 * Kills every process in one of the sessions `sids` (Landlock calls of a job whose child died: none
 * of their processes could leave its session), started at or after `since`, repeating until none is
 * left or `reapMs` passed. Returns the pids still alive at the end (normally none).
 */
export const sweepSessions = (sids: ReadonlySet<number>, since: string | undefined, reapMs = 2000): Promise<ReadonlyArray<number>> =>
  sids.size === 0 ? Promise.resolve([]) : killUntilGone((p) => startedAt(p, since) && sids.has(p.session), reapMs)
