/**
 * The sandbox probe (ARCHITECTURE §10): whether bubblewrap works here, decided once per process by one
 * trivial sandboxed `true` with the namespaces and system mounts every call gets. A leaf module (no
 * Effect, nothing of the kernel) so a cold job child starts the probe the moment it starts (bwrap's namespace setup then overlaps the kernel's loading instead of delaying the job's checks).
 * Sandbox.ts builds the process sandbox on it.
 */
import { lstatSync, readlinkSync } from "node:fs"
import { type JobResources, resourcesFromEnv } from "./jobResources.ts"
import { encodeSpec, JOB_DEVICES } from "./landlock/landlockRules.ts"

/** The only PATH a process sees; argv[0] is resolved on it too (the runner's allowlist). */
export const SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
export const SANDBOX_ENV = "KINTSUGI_SANDBOX"
/**
 * "1" lets `off` run process tools as root. For test runs in root containers where bubblewrap cannot
 * work; never for a real installation (the refusal message does not mention it).
 */
export const UNCONFINED_ROOT_ENV = "KINTSUGI_ALLOW_UNCONFINED_ROOT"
export const SANDBOX_MODES = ["auto", "bwrap", "landlock", "off"] as const
export type SandboxMode = (typeof SANDBOX_MODES)[number]

export interface SandboxConfig {
  /**
   * auto: bubblewrap when it works, else Landlock, else process tools are refused; bwrap or landlock:
   * that mechanism only; off: unconfined.
   */
  readonly mode: SandboxMode
  /** A KINTSUGI_SANDBOX value that is not a mode: process tools are refused, naming it. */
  readonly invalidValue?: string
  /** The bubblewrap binary: a name looked up on SAFE_PATH, or a path (tests name a missing one). */
  readonly bwrap?: string
  /** The Landlock program (confineExec.ts) this process's Bun runs; tests name a missing one. */
  readonly landlock?: string
  /** Unconfined process tools as uid 0 are refused unless "allow" (tests only: UNCONFINED_ROOT_ENV). */
  readonly unconfinedRoot?: "refuse" | "allow"
  /** What one job's processes may take (jobResources.ts); absent = the defaults. */
  readonly resources?: JobResources
  /** Resource variables that are not valid: process tools are refused, naming them. */
  readonly resourceProblems?: ReadonlyArray<string>
}

/** Reads KINTSUGI_SANDBOX (default auto), UNCONFINED_ROOT_ENV and the job resource variables. */
export const sandboxConfigFromEnv = (env: Readonly<Record<string, string | undefined>>): SandboxConfig => {
  const { resources, problems } = resourcesFromEnv(env)
  const withResources = (c: SandboxConfig): SandboxConfig => ({
    ...c,
    resources,
    ...(problems.length === 0 ? {} : { resourceProblems: problems })
  })
  const raw = env[SANDBOX_ENV]?.trim().toLowerCase() ?? ""
  if (raw === "") return withResources({ mode: "auto" })
  if (raw === "off" && env[UNCONFINED_ROOT_ENV] === "1") return withResources({ mode: "off", unconfinedRoot: "allow" })
  if ((SANDBOX_MODES as ReadonlyArray<string>).includes(raw)) return withResources({ mode: raw as SandboxMode })
  // Fail closed: an unknown value requires the sandbox and the refusal names the value.
  return withResources({ mode: "bwrap", invalidValue: env[SANDBOX_ENV] ?? "" })
}

/** How process tools run here. */
export type SandboxStatus =
  | { readonly _tag: "Bwrap"; readonly bwrap: string }
  | { readonly _tag: "Landlock"; readonly abi: number; readonly bun: string; readonly script: string }
  | { readonly _tag: "Off" }
  | { readonly _tag: "Unavailable"; readonly reason: string }

const probes = new Map<string, SandboxStatus>()

const firstLine = (text: string) => (text.trim().split("\n")[0] ?? "").slice(0, 300)

/**
 * Runs one trivial sandboxed `true` with the same namespaces and system mounts a call gets; cached per
 * binary for the life of the process.
 */
export const probeBwrap = (bwrap: string = "bwrap"): SandboxStatus => {
  const cached = probes.get(bwrap)
  if (cached !== undefined) return cached
  const status = runProbe(bwrap)
  probes.set(bwrap, status)
  return status
}

/** The binary a probe of `bwrap` would run (a name is looked up on SAFE_PATH), or undefined when there is none. */
const resolveBwrap = (bwrap: string): string | undefined =>
  bwrap.includes("/") ? bwrap : (Bun.which(bwrap, { PATH: SAFE_PATH }) ?? undefined)

/** What a probe of `bwrap` runs, or its answer when it need not run anything. */
const probeCommand = (bwrap: string): { readonly argv: Array<string> } | SandboxStatus => {
  if (process.platform !== "linux") return { _tag: "Unavailable", reason: "bubblewrap needs Linux" }
  const exe = resolveBwrap(bwrap)
  const trueExe = Bun.which("true", { PATH: SAFE_PATH })
  if (exe === undefined || trueExe === null) {
    return { _tag: "Unavailable", reason: "bubblewrap (bwrap) is not installed (Debian package `bubblewrap`)" }
  }
  return { argv: [exe, ...NAMESPACES, ...systemMounts(), ...PRIVATE_MOUNTS, "--", trueExe] }
}

const PROBE_OPTIONS = { env: { PATH: SAFE_PATH }, stdin: "ignore", stdout: "ignore", stderr: "pipe", timeout: 10_000 } as const

const notStarted = (bwrap: string, e: unknown): SandboxStatus => ({
  _tag: "Unavailable",
  reason: `bubblewrap (${bwrap}) could not be started: ${e instanceof Error ? firstLine(e.message) : "unknown error"}`
})

/** The answer of a probe that ran `exe` and ended with `exitCode` and `stderr`. */
const probeAnswer = (exe: string, exitCode: number | null, stderr: string): SandboxStatus => {
  if (exitCode === 0) return { _tag: "Bwrap", bwrap: exe }
  const why = firstLine(stderr) || `exit code ${String(exitCode)}`
  const hint = /namespace|permitted|denied/i.test(why)
    ? " (user namespaces are blocked here, e.g. by a container's seccomp profile or kernel.unprivileged_userns_clone=0)"
    : ""
  return { _tag: "Unavailable", reason: `bubblewrap does not work here: ${why}${hint}` }
}

const runProbe = (bwrap: string): SandboxStatus => {
  const command = probeCommand(bwrap)
  if (!("argv" in command)) return command
  let r: ReturnType<typeof Bun.spawnSync>
  try {
    r = Bun.spawnSync(command.argv, PROBE_OPTIONS)
  } catch (e) {
    return notStarted(bwrap, e)
  }
  return probeAnswer(command.argv[0] ?? bwrap, r.exitCode, r.stderr?.toString() ?? "")
}

/** runProbe without blocking the thread: the same command, options and answers. */
const runProbeAsync = async (bwrap: string): Promise<SandboxStatus> => {
  const command = probeCommand(bwrap)
  if (!("argv" in command)) return command
  try {
    const p = Bun.spawn(command.argv, PROBE_OPTIONS)
    const [stderr, exitCode] = await Promise.all([new Response(p.stderr).text(), p.exited])
    return probeAnswer(command.argv[0] ?? bwrap, exitCode, stderr)
  } catch (e) {
    return notStarted(bwrap, e)
  }
}

const pendingProbes = new Map<string, Promise<SandboxStatus>>()

/**
 * Starts probing `bwrap` in the background (a cold job child does it while its kernel loads):
 * the first `status` of a sandbox on the same binary then waits for this answer instead of probing
 * again. The answer is a real probe's either way: nothing is assumed while it runs.
 */
export const startProbe = (bwrap: string = "bwrap"): void => startPending(bwrap, () => runProbeAsync(bwrap))

/** Runs `probe` in the background under `key` unless an answer or a probe is there already; its answer is cached as `key`'s. */
const startPending = (key: string, probe: () => Promise<SandboxStatus>): void => {
  if (probes.has(key) || pendingProbes.has(key)) return
  const pending = probe().then((status) => {
    if (pendingProbes.get(key) === pending) {
      pendingProbes.delete(key)
      if (!probes.has(key)) probes.set(key, status)
    }
    return probes.get(key) ?? status
  })
  pendingProbes.set(key, pending)
}

/** A probe startProbe started and that has not answered yet (undefined once answered, or none). */
export const pendingProbe = (bwrap: string = "bwrap"): Promise<SandboxStatus> | undefined =>
  probes.has(bwrap) ? undefined : pendingProbes.get(bwrap)

/**
 * Set by the worker in its job children's environment: the bubblewrap binary its own probe found
 * working (the pool probes once per process, JobChildren.ts). A child whose configured binary resolves
 * to that path takes the answer instead of probing again. Safe to take: it only says bwrap works; every
 * call still runs inside it, so a wrong answer makes calls fail, never run unconfined. Nothing a job
 * does reaches its child's environment.
 */
export const SANDBOX_PROBED_ENV = "KINTSUGI_SANDBOX_PROBED"

/**
 * For the sandbox `env` configures (KINTSUGI_SANDBOX, read as sandboxConfigFromEnv reads it: the job
 * child's environment is the kernel's configuration), unless it is off or invalid: takes the worker's
 * answer (SANDBOX_PROBED_ENV) when it names the binary this probe would run, else startProbe.
 */
export const startProbeFromEnv = (env: Readonly<Record<string, string | undefined>>): void => {
  const config = sandboxConfigFromEnv(env)
  if (config.mode === "off" || config.invalidValue !== undefined) return
  const bwrap = config.bwrap ?? "bwrap"
  const probed = env[SANDBOX_PROBED_ENV]
  const landlock = probed?.startsWith(`${LANDLOCK_KEY}:`) === true ? Number(probed.slice(LANDLOCK_KEY.length + 1)) : undefined
  if (
    config.mode !== "bwrap" &&
    landlock !== undefined &&
    Number.isInteger(landlock) &&
    landlock > 0 &&
    !probes.has(landlockKey(CONFINE_SCRIPT))
  ) {
    probes.set(landlockKey(CONFINE_SCRIPT), { _tag: "Landlock", abi: landlock, bun: process.execPath, script: CONFINE_SCRIPT })
  }
  if (config.mode === "landlock") return startLandlockProbe()
  if (process.platform === "linux" && probed !== undefined && probed !== "" && !probes.has(bwrap) && resolveBwrap(bwrap) === probed) {
    probes.set(bwrap, { _tag: "Bwrap", bwrap: probed })
    return
  }
  if (config.mode === "auto" && landlock !== undefined) {
    // The worker found bubblewrap unusable and Landlock working: no bwrap probe to wait for.
    probes.set(bwrap, { _tag: "Unavailable", reason: "bubblewrap does not work here (the worker's probe)" })
    return
  }
  startProbe(bwrap)
  if (config.mode === "auto") {
    void pendingProbe(bwrap)?.then((status) => {
      if (status._tag === "Unavailable") startLandlockProbe()
    })
  }
}

/** Forgets cached probe answers (tests that change what a binary name points at). */
export const forgetProbes = (): void => {
  probes.clear()
  pendingProbes.clear()
}

/** The program that confines one call under Landlock (run by this process's own Bun). */
export const CONFINE_SCRIPT = new URL("./landlock/confineExec.ts", import.meta.url).pathname
const LANDLOCK_KEY = "landlock"
const landlockKey = (script: string) => `${LANDLOCK_KEY}:${script}`

/** Generous limits for the probe's `true`; a job's calls get the job's. */
const PROBE_RLIMITS = { dataBytes: 1024 * 1024 * 1024, fileBytes: 1024 * 1024, cpuSec: 10 }

/** What a Landlock probe runs: confineExec in probe mode (it prints the ABI) around `true`, or its answer when nothing can run. */
const landlockCommand = (script: string): { readonly argv: Array<string> } | SandboxStatus => {
  if (process.platform !== "linux") return { _tag: "Unavailable", reason: "Landlock needs Linux" }
  if (process.arch !== "x64" && process.arch !== "arm64")
    return { _tag: "Unavailable", reason: `Landlock: no seccomp filter for ${process.arch}` }
  const trueExe = Bun.which("true", { PATH: SAFE_PATH })
  if (trueExe === null) return { _tag: "Unavailable", reason: "Landlock: `true` is not on the system path" }
  const spec = encodeSpec({ readOnly: systemPaths(), writable: [], devices: [...JOB_DEVICES], rlimits: PROBE_RLIMITS, argv: [trueExe] })
  return { argv: [process.execPath, script, "--probe", spec, "--"] }
}

const landlockAnswer = (script: string, exitCode: number | null, stdout: string, stderr: string): SandboxStatus => {
  const abi = Number(stdout.trim())
  if (exitCode === 0 && Number.isInteger(abi) && abi > 0) return { _tag: "Landlock", abi, bun: process.execPath, script }
  const why = firstLine(stderr).replace(/^sandbox: /, "") || `exit code ${String(exitCode)}`
  return { _tag: "Unavailable", reason: `Landlock does not work here: ${why}` }
}

/** Whether Landlock confines a trivial command here (ABI ≥ 1, no_new_privs, seccomp); cached for the life of the process. */
export const probeLandlock = (script: string = CONFINE_SCRIPT): SandboxStatus => {
  const cached = probes.get(landlockKey(script))
  if (cached !== undefined) return cached
  const command = landlockCommand(script)
  let status: SandboxStatus
  if (!("argv" in command)) status = command
  else {
    try {
      const r = Bun.spawnSync(command.argv, { ...PROBE_OPTIONS, stdout: "pipe" })
      status = landlockAnswer(script, r.exitCode, r.stdout?.toString() ?? "", r.stderr?.toString() ?? "")
    } catch (e) {
      status = {
        _tag: "Unavailable",
        reason: `Landlock could not be probed: ${e instanceof Error ? firstLine(e.message) : "unknown error"}`
      }
    }
  }
  probes.set(landlockKey(script), status)
  return status
}

const probeLandlockAsync = async (script: string): Promise<SandboxStatus> => {
  const command = landlockCommand(script)
  if (!("argv" in command)) return command
  try {
    const p = Bun.spawn(command.argv, { ...PROBE_OPTIONS, stdout: "pipe" })
    const [stdout, stderr, exitCode] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    return landlockAnswer(script, exitCode, stdout, stderr)
  } catch (e) {
    return { _tag: "Unavailable", reason: `Landlock could not be probed: ${e instanceof Error ? firstLine(e.message) : "unknown error"}` }
  }
}

/** startProbe for Landlock: the first `probeLandlockStatus` waits for this answer. */
export const startLandlockProbe = (script: string = CONFINE_SCRIPT): void =>
  startPending(landlockKey(script), () => probeLandlockAsync(script))

/** A Landlock probe startLandlockProbe started and that has not answered yet. */
export const pendingLandlockProbe = (script: string = CONFINE_SCRIPT): Promise<SandboxStatus> | undefined =>
  probes.has(landlockKey(script)) ? undefined : pendingProbes.get(landlockKey(script))

/** The SANDBOX_PROBED_ENV value that hands a child the worker's Landlock answer. */
export const landlockProbedValue = (abi: number): string => `${LANDLOCK_KEY}:${abi}`

// --cap-drop ALL: run as root, bwrap keeps every capability inside its user namespace, and
// CAP_SYS_ADMIN there can remount a read-only root read-write (`mount -o remount,rw,bind`).
export const NAMESPACES = ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session"] as const
export const PRIVATE_MOUNTS = ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"] as const
/** Top-level system directories, mounted read-only (or recreated as the symlinks they are). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"] as const
/** The pieces of /etc that the dynamic loader and Debian's alternatives need; nothing else of it. */
const ETC_FILES = ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"] as const

/** The system paths a Landlock-confined call may read: the same directories and /etc files bubblewrap mounts. */
export const systemPaths = (): Array<string> => [...SYSTEM_DIRS, ...ETC_FILES]

let systemMountsCache: ReadonlyArray<string> | undefined

/**
 * Mount arguments for a minimal read-only system: /usr, the lib/bin dirs, a few /etc files. Read
 * once per process (the system layout does not change under a running server), not once per call.
 */
export const systemMounts = (): Array<string> => {
  systemMountsCache ??= readSystemMounts()
  return [...systemMountsCache]
}

const readSystemMounts = (): Array<string> => {
  const out: Array<string> = []
  for (const dir of SYSTEM_DIRS) {
    try {
      const st = lstatSync(dir)
      if (st.isSymbolicLink()) out.push("--symlink", readlinkSync(dir), dir)
      else if (st.isDirectory()) out.push("--ro-bind", dir, dir)
    } catch {
      // Not on this system (e.g. /lib32): nothing to mount.
    }
  }
  for (const f of ETC_FILES) out.push("--ro-bind-try", f, f)
  return out
}
