/**
 * The process runner: one argv process per call (never a shell of its own) in a new session and
 * process group, with an allowlisted environment, stdin on /dev/null, bounded output capture, a
 * timeout, and a kill-tree that runs on exit (when anything may be left), on timeout and on Effect
 * interruption alike. With a sandbox, the direct child is bubblewrap (no session of its own) and the
 * command runs inside it (Sandbox.ts).
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { diskUsage } from "./diskUsage.ts"
import { DEFAULT_RESOURCES, type JobResources, limitMessage, rlimitsOf } from "./jobResources.ts"
import { encodeSpec, JOB_DEVICES } from "./landlock/landlockRules.ts"
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../job/toolLimits.ts"
import { OutputCapture } from "./outputCapture.ts"
import { pidClockBeforeSpawn, ProcessTree, RUN_TOKEN_VAR, scanProcesses } from "./processTree.ts"
import { bwrapArgs, type LandlockRun, SAFE_PATH, sandboxViewPath, type SandboxedRun, systemPaths } from "./Sandbox.ts"
import { ToolError } from "./Tool.ts"

export { SAFE_PATH }
/** Time between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 500
/** How long the pipes may stay open after the direct child exited (a background job holds them). */
export const DRAIN_MS = 250
/** How often running trees are snapshotted, so a `setsid` grandchild is known before its parent dies. */
const TRACK_INTERVAL_MS = 100
// Room the tools need around the captured output (status line, marker) within the shared limits.
const CAPTURE_BYTES = MAX_OUTPUT_BYTES - 256
const CAPTURE_LINES = MAX_OUTPUT_LINES - 4

export interface RunRequest {
  /** argv[0] without a slash is looked up on SAFE_PATH; nothing is ever interpreted by a shell here. */
  readonly argv: readonly [string, ...Array<string>]
  /** Working directory; the kernel passes workspace.root. */
  readonly cwd: string
  /** Hard limit; on expiry the whole tree is killed and `timedOut` is true. */
  readonly timeoutMs: number
  /** HOME for the process; defaults to `cwd`. */
  readonly home?: string
  /** Extra variables (e.g. GIT_CONFIG_NOSYSTEM); they never override the base allowlist. */
  readonly env?: Readonly<Record<string, string>>
  /** Called whenever output arrives (the idle watchdog's progress signal). */
  readonly onOutput?: () => void
  /**
   * Unconfined only: false runs the process in the job child's session and group instead of a new
   * one (saving the kernel's setsid(), costly under load). Only for a process that
   * runs no shell and starts nothing by itself (hardened git): whatever it still started would be
   * found by descendant links and the run token, not by group.
   */
  readonly newSession?: boolean
}

export interface RunResult {
  /** null when the process was ended by a signal. */
  readonly exitCode: number | null
  readonly signal?: string
  readonly timedOut: boolean
  /** stdout and stderr merged in arrival order, head + tail within the output limits. */
  readonly output: string
  readonly truncated: boolean
  /** The job resource limit the call reached ("memory limit 1024 MiB"), when it did. */
  readonly limit?: string
}

export interface ProcessRunnerShape {
  /**
   * Runs one process to completion and sweeps its tree (group, session, descendants, token
   * carriers) before succeeding. Fails only when the process cannot start (`ToolError`).
   * Interruption kills the tree and waits for it before the interruption completes.
   */
  readonly run: (req: RunRequest) => Effect.Effect<RunResult, ToolError>
  /** Kills every tree still running; returns the pids that survived SIGKILL (normally none). */
  readonly killAll: Effect.Effect<ReadonlyArray<number>>
  /** Number of runs in flight. */
  readonly active: () => number
  /**
   * Where this process can look at what the runner's processes see at `path` (for checks made
   * without a process): `path` itself unconfined, a path through the workspace's mount handle in the
   * sandbox, undefined when the sandbox does not show `path` at all.
   */
  readonly view: (path: string) => string | undefined
}

export class ProcessRunner extends Context.Tag("tools/ProcessRunner")<ProcessRunner, ProcessRunnerShape>() {}

/** The complete environment of a process: these variables, the request's extras, nothing inherited. */
export const baseEnvironment = (home: string, token: string): Record<string, string> => ({
  PATH: SAFE_PATH,
  HOME: home,
  LANG: "C.UTF-8",
  TERM: "dumb",
  TZ: "UTC",
  [RUN_TOKEN_VAR]: token
})

interface Running {
  readonly tree: ProcessTree
  /** Kills the tree at once (no grace) because it reached `limit`; the first limit reached is the one reported. */
  readonly reachedLimit: (limit: string) => void
  /** Kill-tree; calls are serialized, each one sweeps again. */
  readonly kill: () => Promise<ReadonlyArray<number>>
  /** Settles once the direct child exited, the tree is swept and both pipes are closed or cancelled. */
  readonly done: Promise<RunResult>
  readonly settled: () => boolean
}

const settleWithin = (p: Promise<unknown>, ms: number): Promise<boolean> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    p.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

export interface RunnerOptions {
  /** Run every process inside bubblewrap, confined to this workspace; absent = unconfined. */
  readonly sandbox?: SandboxedRun
  /** Run every process under Landlock (confineExec.ts), confined to this workspace; not with `sandbox`. */
  readonly landlock?: LandlockRun
  /** The job's private temporary directory: bound at /tmp in bubblewrap, TMPDIR otherwise. */
  readonly tmpDir?: string
  /** What the job's processes may take (per-process rlimits plus the runner's watch); absent = unbounded. */
  readonly resources?: JobResources
  /** The directory whose growth counts against `resources.outDirMb` (the job's outDir). */
  readonly outDir?: string
  /**
   * Told the session id of each Landlock call as it starts (its first process leads a new session that
   * none of its processes can leave): where the worker finds what outlived a job child killed mid-call.
   */
  readonly onSession?: (sid: number) => void
  /** Prefix of every run token (the job's), so a worker can find leftovers after the job child died. */
  readonly tokenPrefix?: string
}

/** argv[0] on SAFE_PATH, looked up once per runner (one job): the system directories do not change under it. */
const resolver = () => {
  const found = new Map<string, string>()
  return (cmd: string): string => {
    if (cmd.includes("/")) return cmd
    const known = found.get(cmd)
    if (known !== undefined) return known
    const exe = Bun.which(cmd, { PATH: SAFE_PATH })
    if (exe === null) throw new Error(`${cmd}: not found on ${SAFE_PATH}`)
    found.set(cmd, exe)
    return exe
  }
}

/** Open files per process: the usual default, also what bounds files a call keeps open after deleting them. */
const OPEN_FILES = 1024

/** `prlimit`'s arguments that set the per-process limits backing `resources`, before the command. */
const prlimitArgs = (prlimit: string, resources: JobResources): Array<string> => {
  const r = rlimitsOf(resources)
  return [prlimit, `--data=${r.dataBytes}`, `--fsize=${r.fileBytes}`, `--cpu=${r.cpuSec}:${r.cpuSec + 1}`, `--nofile=${OPEN_FILES}`, "--"]
}

/** The argv that runs `command` as the options confine it: in bubblewrap, under Landlock, or as it is (behind prlimit when bounded). */
const confinedArgv = (
  command: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  cwd: string,
  options: RunnerOptions,
  prlimit: string | undefined
): Array<string> => {
  const { sandbox, landlock, resources } = options
  const limited = resources === undefined || prlimit === undefined ? [] : prlimitArgs(prlimit, resources)
  if (landlock !== undefined) {
    const ws = landlock.workspace
    // With handles (mountSources order: the read-only entries, then outDir) the workspace is granted
    // through them, never reopened by name.
    const handles = landlock.handles
    const fds = handles === undefined ? undefined : handles.map((_, i) => FIRST_HANDLE_FD + i)
    const spec = encodeSpec({
      readOnly: [...systemPaths(), ...(fds === undefined ? ws.readOnly : [])],
      writable: [...(fds === undefined ? [ws.outDir] : []), ...(options.tmpDir === undefined ? [] : [options.tmpDir])],
      ...(fds === undefined ? {} : { readOnlyFds: fds.slice(0, ws.readOnly.length), writableFds: fds.slice(ws.readOnly.length) }),
      devices: [...JOB_DEVICES],
      cwd,
      env,
      // prlimit sets the limits after confineExec became it; without prlimit, confineExec sets them itself.
      ...(limited.length > 0 ? {} : { rlimits: rlimitsOf(resources ?? DEFAULT_RESOURCES) }),
      argv: [...limited, ...command]
    })
    return [landlock.bun, ...trustedBunFlags(landlock.script), landlock.script, spec, "--"]
  }
  if (sandbox === undefined) return [...limited, ...command]
  return [...limited, sandbox.bwrap, ...bwrapArgs(sandbox.workspace, env, cwd, sandbox.handles, options.tmpDir), ...command]
}

/** The first descriptor a workspace handle gets in the child (after stdin, stdout, stderr). */
const FIRST_HANDLE_FD = 3

/**
 * Flags that keep the workspace from configuring the Bun that runs confineExec.ts: no `.env` file,
 * the installation's own tsconfig (its bunfig is the one in its directory, where it starts).
 */
const trustedBunFlags = (script: string): Array<string> => {
  const tsconfig = join(dirname(script), "..", "..", "..", "tsconfig.json")
  return ["--no-env-file", ...(existsSync(tsconfig) ? [`--tsconfig-override=${tsconfig}`] : [])]
}

/** The environment of the Bun that runs confineExec.ts: only what it needs to start, HOME its own directory, no transpiler cache a job could have written. */
const confineEnvironment = (script: string, token: string): Record<string, string> => ({
  PATH: SAFE_PATH,
  HOME: dirname(script),
  LANG: "C.UTF-8",
  BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0",
  [RUN_TOKEN_VAR]: token
})

/** A signal or exit that a per-process limit caused, as the limit's name; undefined for any other ending. */
const rlimitEnding = (
  exitCode: number | null,
  signal: string | undefined,
  output: string,
  failed: boolean,
  resources: JobResources | undefined
): string | undefined => {
  if (resources === undefined) return undefined
  if (signal === "SIGXCPU" || exitCode === 128 + 24) return `${limitMessage("cpu", resources)} reached by one process`
  // bash and coreutils say so when an allocation fails at RLIMIT_DATA.
  if (
    failed &&
    /cannot allocate memory|xmalloc: cannot|xrealloc: cannot|memory exhausted|bad_alloc|MemoryError|heap out of memory/i.test(output)
  ) {
    return `${limitMessage("memory", resources)} reached: an allocation was refused`
  }
  return undefined
}

const start = (
  req: RunRequest,
  options: RunnerOptions,
  resolve: (cmd: string) => string,
  prlimit: string | undefined,
  disk: DiskWatch | undefined
): Running => {
  const [cmd, ...rest] = req.argv
  const exe = resolve(cmd)
  const token = `${options.tokenPrefix ?? ""}${randomBytes(12).toString("hex")}`
  const sandbox = options.sandbox
  const tmp: Record<string, string> = sandbox === undefined && options.tmpDir !== undefined ? { TMPDIR: options.tmpDir } : {}
  const env = { ...req.env, ...tmp, ...baseEnvironment(req.home ?? req.cwd, token) }
  // bwrap gets the same environment, so the token sweep finds it too; it passes exactly `env` inside.
  const argv = confinedArgv([exe, ...rest], env, req.cwd, options, prlimit)
  // Read before the spawn: what the clean-exit check needs to look only at pids handed out since.
  const clock = sandbox === undefined ? pidClockBeforeSpawn() : undefined
  const landlock = options.landlock
  const detached = sandbox === undefined && (req.newSession !== false || options.landlock !== undefined)
  const proc = Bun.spawn(argv, {
    // Under Landlock the Bun that confines the call starts in the installation's directory with an
    // environment of its own; the command's working directory and environment travel in its spec.
    cwd: landlock === undefined ? req.cwd : dirname(landlock.script),
    env: landlock === undefined ? env : confineEnvironment(landlock.script, token),
    // The workspace handles become fds 3, 4, … of bwrap or confineExec; both close them before the command runs.
    stdio: ["ignore", "pipe", "pipe", ...(sandbox?.handles ?? landlock?.handles ?? [])],
    // Unconfined, the child leads a new session and process group (the sweep kills by group). In the
    // sandbox bwrap needs neither: --new-session gives the command its session, and everything of
    // the call lives in bwrap's pid namespace, which dies with it. A new session is costly for the
    // kernel (setsid() also creates a scheduler autogroup): more than the call itself.
    detached
  })
  if (landlock !== undefined) options.onSession?.(proc.pid)
  const tree = new ProcessTree(proc.pid, token, detached)
  const capture = new OutputCapture(CAPTURE_BYTES, CAPTURE_LINES)
  const readers: Array<{ readonly cancel: () => Promise<void> }> = []
  const pump = async (stream: ReadableStream<Uint8Array>): Promise<void> => {
    const reader = stream.getReader()
    readers.push(reader)
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        capture.push(value)
        req.onOutput?.()
      }
    } catch {
      // A cancelled or broken pipe ends the capture; what arrived so far is kept.
    }
  }
  let pipesClosed = false
  const drained = Promise.all([pump(proc.stdout), pump(proc.stderr)]).then(() => {
    pipesClosed = true
  })
  // No timer (and no extra turn of the event loop) when both pipes are closed already: the usual case.
  const pipesDrained = (): Promise<boolean> => (pipesClosed ? Promise.resolve(true) : settleWithin(drained, DRAIN_MS))

  let killing: Promise<ReadonlyArray<number>> = Promise.resolve([])
  const kill = (graceMs = KILL_GRACE_MS) => (killing = killing.then(() => tree.kill(graceMs)).catch(() => []))
  let limit: string | undefined
  const reachedLimit = (reached: string) => {
    if (limit !== undefined || settled) return
    limit = reached
    void kill(0)
  }
  let timedOut: boolean = false
  const timer = setTimeout(
    () => {
      timedOut = true
      void kill()
    },
    Math.max(0, req.timeoutMs)
  )

  let settled = false
  const done = (async (): Promise<RunResult> => {
    await proc.exited
    tree.childExited()
    clearTimeout(timer)
    await pipesDrained()
    // Nothing may outlive the call, also after a clean exit (`sleep 300 &`). In the sandbox
    // the kernel has done it already: bwrap's pid namespace dies with its first process, and every
    // process of the call lives in it. Unconfined, a look at the pids handed out since the spawn
    // shows whether anything of the call is left; only then is all of /proc scanned and signalled.
    if (timedOut || (sandbox === undefined && !tree.cleared(clock))) await kill()
    if (!(await pipesDrained())) {
      // Something we could not kill still holds a pipe: stop reading rather than hang.
      await Promise.allSettled(readers.map((r) => r.cancel()))
      await settleWithin(drained, DRAIN_MS)
    }
    settled = true
    const out = capture.result()
    const signal = proc.signalCode === null ? undefined : String(proc.signalCode)
    const exitCode = signal === undefined ? proc.exitCode : null
    // A file stopped at RLIMIT_FSIZE (a little over the larger disk limit: SIGXFSZ, or EFBIG where it is
    // ignored): which disk limit it passed.
    // Every call ends with a look at the disk limits: a call shorter than the watch's interval is judged too.
    const fileLimit = limit === undefined && disk !== undefined ? await disk.check() : undefined
    const reached = limit ?? fileLimit ?? rlimitEnding(exitCode, signal, out.text, exitCode !== 0, options.resources)
    // Emptied only now, with every process of the call gone: nothing writes into it any more.
    if (options.resources !== undefined && options.tmpDir !== undefined && reached === tmpReached(options.resources))
      emptyDirectory(options.tmpDir)
    return {
      exitCode,
      ...(signal === undefined ? {} : { signal }),
      timedOut,
      output: out.text,
      truncated: out.truncated,
      ...(reached === undefined ? {} : { limit: reached })
    }
  })()
  return { tree, kill, reachedLimit, done, settled: () => settled }
}

const MiB = 1024 * 1024
/** USER_HZ: the unit of /proc's CPU times on every Linux architecture Bun runs on. */
const CLOCK_TICKS = 100
/** How often, at most, the disk limits are measured while calls run (a slow walk spaces them further). */
const DISK_INTERVAL_MS = 250

let pageBytes: number | undefined
/** The kernel's page size (what /proc's rss counts in), from this process's own figures. */
const pageSize = (): number => {
  if (pageBytes !== undefined) return pageBytes
  pageBytes = 4096
  try {
    const statm = Number(readFileSync("/proc/self/statm", "latin1").split(" ")[1])
    const vmRss = /VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "latin1"))?.[1]
    if (statm > 0 && vmRss !== undefined) pageBytes = 2 ** Math.round(Math.log2((Number(vmRss) * 1024) / statm))
  } catch {
    // No /proc: 4 KiB pages, the size on every common Linux machine.
  }
  return pageBytes
}

/** Removes everything inside `dir`, keeping `dir`. */
/** The limit a call reached when the temporary directory outgrew its own; the call empties it once its processes are gone. */
const tmpReached = (resources: JobResources): string => `killed: ${limitMessage("tmp", resources)} (the temporary directory was emptied)`

const emptyDirectory = (dir: string): void => {
  try {
    for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true })
  } catch {
    // Gone already: nothing to free.
  }
}

interface DiskWatch {
  /** Measures now; the limit reached (a temporary directory over its limit is emptied), or undefined. */
  readonly check: () => Promise<string | undefined>
  /** Called by the tracker: measures again when the last walk is done and spaced, and kills every running call at a limit. */
  readonly tick: () => void
}

/**
 * The disk limits of one job: the temporary directory's size and outDir's growth since the runner
 * was made, measured while calls run (never two walks at once, spaced by their own duration). A
 * limit reached kills every running call; a temporary directory over its limit is emptied.
 */
const diskWatch = (options: RunnerOptions, resources: JobResources, running: () => ReadonlySet<Running>): DiskWatch => {
  const outDir = options.outDir
  let baseline: number | undefined
  const baselineRead = outDir === undefined ? Promise.resolve() : diskUsage(outDir).then((n) => void (baseline = n))
  let walking = false
  let nextAt = 0
  const check = async (): Promise<string | undefined> => {
    const [tmp, out] = await Promise.all([
      options.tmpDir === undefined ? 0 : diskUsage(options.tmpDir),
      outDir === undefined ? 0 : baselineRead.then(() => diskUsage(outDir))
    ])
    if (tmp > resources.tmpMb * MiB) {
      return tmpReached(resources)
    }
    if (baseline !== undefined && out - baseline > resources.outDirMb * MiB)
      return `killed: ${limitMessage("outDir", resources)} (what the job added to outDir)`
    return undefined
  }
  return {
    check,
    tick: () => {
      // Date.now(): the tracker's timer callback is synchronous bookkeeping outside any Effect.
      if (walking || Date.now() < nextAt) return
      walking = true
      const began = Date.now()
      void check()
        .then((reached) => {
          if (reached !== undefined) for (const r of running()) r.reachedLimit(reached)
        })
        .finally(() => {
          walking = false
          nextAt = Date.now() + Math.max(DISK_INTERVAL_MS, 4 * (Date.now() - began))
        })
    }
  }
}

/** A runner whose scope finalizer kills every tree still running. */
export const makeProcessRunner = (options: RunnerOptions = {}): Effect.Effect<ProcessRunnerShape, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => createProcessRunner(options)),
    (runner) => runner.killAll
  )

/** A runner without a scope: the caller owns `killAll`. */
export const createProcessRunner = (options: RunnerOptions = {}): ProcessRunnerShape => {
  const running = new Set<Running>()
  const resolve = resolver()
  const resources = options.resources
  const prlimit = resources === undefined ? undefined : (Bun.which("prlimit", { PATH: SAFE_PATH }) ?? undefined)
  const disk = resources === undefined ? undefined : diskWatch(options, resources, () => running)
  let tracker: ReturnType<typeof setInterval> | undefined
  const track = () => {
    if (running.size === 0) return
    const procs = scanProcesses()
    for (const r of running) {
      if (resources === undefined) {
        r.tree.observe(procs)
        continue
      }
      const usage = r.tree.usage(procs)
      if (usage.tasks > resources.processes) r.reachedLimit(`killed: ${limitMessage("processes", resources)}`)
      else if (usage.rssPages * pageSize() > resources.memoryMb * MiB) r.reachedLimit(`killed: ${limitMessage("memory", resources)}`)
      // The call's CPU time: what its live processes used, with the children they reaped (RLIMIT_CPU bounds each process too).
      else if (usage.cpuTicks / CLOCK_TICKS > resources.cpuSec) r.reachedLimit(`killed: ${limitMessage("cpu", resources)}`)
    }
    disk?.tick()
  }
  const register = (r: Running) => {
    running.add(r)
    if (tracker === undefined) {
      tracker = setInterval(track, TRACK_INTERVAL_MS)
      tracker.unref()
    }
  }
  const unregister = (r: Running) => {
    running.delete(r)
    if (running.size === 0 && tracker !== undefined) {
      clearInterval(tracker)
      tracker = undefined
    }
  }
  /** Interrupted (or `done` failed) before the tree was swept: kill it now and wait for the sweep. */
  const abandon = (r: Running): Promise<void> =>
    r
      .kill()
      .then(() => r.done)
      .then(
        () => undefined,
        () => undefined
      )
      .finally(() => unregister(r))

  // One callback per call rather than acquire/use/release: no scope or uninterruptible region to set
  // up, and the result resumes the fiber in the turn `done` settles. The canceler is the release.
  const run = (req: RunRequest): Effect.Effect<RunResult, ToolError> =>
    Effect.async<RunResult, ToolError>((resume) => {
      let r: Running
      try {
        r = start(req, options, resolve, prlimit, disk)
      } catch (e) {
        resume(Effect.fail(new ToolError({ message: `could not start ${req.argv[0]}: ${e instanceof Error ? e.message : String(e)}` })))
        return
      }
      register(r)
      r.done.then(
        (result) => {
          unregister(r)
          resume(Effect.succeed(result))
        },
        // r.done rejects only on a bug in the runner itself (its outcomes resolve): a defect.
        (defect: unknown) => void abandon(r).then(() => resume(Effect.die(defect)))
      )
      return Effect.promise(() => (r.settled() ? Promise.resolve(unregister(r)) : abandon(r)))
    })

  const killAll = Effect.promise(async () => {
    const all = [...running]
    const survivors = await Promise.all(all.map((r) => r.kill()))
    return survivors.flat()
  })

  const sandbox = options.sandbox
  const view = (path: string): string | undefined =>
    sandbox === undefined ? path : sandboxViewPath(sandbox.workspace, path, sandbox.handles)

  return { run, killAll, active: () => running.size, view }
}

/** The per-job runner: the kernel provides it per job, so closing the job's scope kills every tree. */
export const processRunnerLayer = (options: RunnerOptions): Layer.Layer<ProcessRunner> =>
  Layer.scoped(ProcessRunner, makeProcessRunner(options))

/** An unconfined per-job runner. */
export const ProcessRunnerLive: Layer.Layer<ProcessRunner> = processRunnerLayer({})
