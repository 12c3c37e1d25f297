/**
 * The process sandbox (ARCHITECTURE §10): whether `shell` and `git` run inside bubblewrap, the probe
 * that decides it once per process, and the bwrap argv that confines one call to the job's workspace.
 */
import { Config, Context, Effect, Layer } from "effect"
import { closeSync, constants, lstatSync, openSync, readlinkSync } from "node:fs"
import { SKILLS_MOUNT } from "./confinement.ts"
import type { ResolvedWorkspace } from "./Tool.ts"

/** The only PATH a process sees; argv[0] is resolved on it too (the runner's allowlist). */
export const SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
export const SANDBOX_ENV = "KINTSUGI_SANDBOX"
/**
 * "1" lets `off` run process tools as root. For test runs in root containers where bubblewrap cannot
 * work; never for a real installation (the refusal message does not mention it).
 */
export const UNCONFINED_ROOT_ENV = "KINTSUGI_ALLOW_UNCONFINED_ROOT"
export const SANDBOX_MODES = ["auto", "bwrap", "off"] as const
export type SandboxMode = (typeof SANDBOX_MODES)[number]

export interface SandboxConfig {
  /** auto and bwrap: bubblewrap when it works, else process tools are refused; off: unconfined. */
  readonly mode: SandboxMode
  /** A KINTSUGI_SANDBOX value that is not a mode: process tools are refused, naming it. */
  readonly invalidValue?: string
  /** The bubblewrap binary: a name looked up on SAFE_PATH, or a path (tests name a missing one). */
  readonly bwrap?: string
  /** Unconfined process tools as uid 0 are refused unless "allow" (tests only: UNCONFINED_ROOT_ENV). */
  readonly unconfinedRoot?: "refuse" | "allow"
}

/** Reads KINTSUGI_SANDBOX (default auto) and UNCONFINED_ROOT_ENV. */
export const sandboxConfigFromEnv = (env: Readonly<Record<string, string | undefined>>): SandboxConfig => {
  const raw = env[SANDBOX_ENV]?.trim().toLowerCase() ?? ""
  if (raw === "") return { mode: "auto" }
  if (raw === "off" && env[UNCONFINED_ROOT_ENV] === "1") return { mode: "off", unconfinedRoot: "allow" }
  if ((SANDBOX_MODES as ReadonlyArray<string>).includes(raw)) return { mode: raw as SandboxMode }
  // Fail closed: an unknown value requires the sandbox and the refusal names the value.
  return { mode: "bwrap", invalidValue: env[SANDBOX_ENV] ?? "" }
}

/** `sandboxConfigFromEnv` over the configuration (the environment unless a ConfigProvider says otherwise); never fails. */
export const sandboxConfig: Effect.Effect<SandboxConfig> = Config.all({
  mode: Config.string(SANDBOX_ENV).pipe(Config.option),
  unconfinedRoot: Config.string(UNCONFINED_ROOT_ENV).pipe(Config.option)
}).pipe(
  Effect.map(({ mode, unconfinedRoot }) =>
    sandboxConfigFromEnv({
      ...(mode._tag === "Some" ? { [SANDBOX_ENV]: mode.value } : {}),
      ...(unconfinedRoot._tag === "Some" ? { [UNCONFINED_ROOT_ENV]: unconfinedRoot.value } : {})
    })
  ),
  // A value Config cannot read as a string does not exist in an environment; fail closed all the same.
  Effect.orElseSucceed((): SandboxConfig => ({ mode: "bwrap", invalidValue: "" }))
)

/** How process tools run here. */
export type SandboxStatus =
  | { readonly _tag: "Bwrap"; readonly bwrap: string }
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

/** What a probe of `bwrap` runs, or its answer when it need not run anything. */
const probeCommand = (bwrap: string): { readonly argv: Array<string> } | SandboxStatus => {
  if (process.platform !== "linux") return { _tag: "Unavailable", reason: "bubblewrap needs Linux" }
  const exe = bwrap.includes("/") ? bwrap : Bun.which(bwrap, { PATH: SAFE_PATH })
  const trueExe = Bun.which("true", { PATH: SAFE_PATH })
  if (exe === null || trueExe === null) {
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
 * Starts probing `bwrap` in the background (a cold job child does it while its kernel loads, issue 15):
 * the first `status` of a sandbox on the same binary then waits for this answer instead of probing
 * again. The answer is a real probe's either way: nothing is assumed while it runs.
 */
export const startProbe = (bwrap: string = "bwrap"): void => {
  if (probes.has(bwrap) || pendingProbes.has(bwrap)) return
  const pending = runProbeAsync(bwrap).then((status) => {
    if (pendingProbes.get(bwrap) === pending) {
      pendingProbes.delete(bwrap)
      if (!probes.has(bwrap)) probes.set(bwrap, status)
    }
    return probes.get(bwrap) ?? status
  })
  pendingProbes.set(bwrap, pending)
}

/** startProbe for the sandbox KINTSUGI_SANDBOX configures (through Config, as the kernel reads it), unless it is off or invalid. */
export const startConfiguredProbe = (): void => {
  const config = Effect.runSync(sandboxConfig)
  if (config.mode !== "off" && config.invalidValue === undefined) startProbe(config.bwrap)
}

/** probeBwrap's answer, waiting for a probe startProbe started rather than running another. */
const probeStatus = (bwrap: string = "bwrap"): Effect.Effect<SandboxStatus> => {
  const pending = probes.has(bwrap) ? undefined : pendingProbes.get(bwrap)
  return pending === undefined ? Effect.sync(() => probeBwrap(bwrap)) : Effect.promise(() => pending)
}

/** Forgets cached probe answers (tests that change what a binary name points at). */
export const forgetProbes = (): void => {
  probes.clear()
  pendingProbes.clear()
}

// --cap-drop ALL: run as root, bwrap keeps every capability inside its user namespace, and
// CAP_SYS_ADMIN there can remount a read-only root read-write (measured: `mount -o remount,rw,bind`).
const NAMESPACES = ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session"] as const
const PRIVATE_MOUNTS = ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"] as const
/** Top-level system directories, mounted read-only (or recreated as the symlinks they are). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"] as const
/** The pieces of /etc that the dynamic loader and Debian's alternatives need; nothing else of it. */
const ETC_FILES = ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"] as const

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

const depth = (p: string) => p.split("/").filter((s) => s !== "").length

/** Linux O_PATH: a handle that names a file or directory without opening it for I/O. */
const O_PATH = 0o10000000

/** The host paths bwrap binds, in the order their handles are passed to it (fd 3, 4, …): the read-only entries, then outDir. */
export const mountSources = (ws: ResolvedWorkspace): ReadonlyArray<string> => [...ws.readOnly, ws.outDir]

/** The first descriptor a handle gets in bwrap (after stdin, stdout, stderr). */
const FIRST_HANDLE_FD = 3

/**
 * Opens every mount source of `ws` as an O_PATH handle (no symlink followed), each checked to name
 * exactly the canonical path the job was admitted with. Bound through these, what the sandbox shows
 * cannot be changed later by swapping a path for a symlink (another job whose outDir holds this
 * workspace could). Undefined, with nothing left open, when a path no longer is what was checked.
 */
export const openMountHandles = (ws: ResolvedWorkspace): ReadonlyArray<number> | undefined => {
  const fds: Array<number> = []
  try {
    for (const p of mountSources(ws)) {
      const fd = openSync(p, O_PATH | constants.O_NOFOLLOW)
      fds.push(fd)
      if (readlinkSync(`/proc/self/fd/${fd}`) !== p) throw new Error("changed")
    }
    return fds
  } catch {
    closeMountHandles(fds)
    return undefined
  }
}

/** Closes handles from openMountHandles (at the end of the job). */
export const closeMountHandles = (fds: ReadonlyArray<number>): void => {
  for (const fd of fds) {
    try {
      closeSync(fd)
    } catch {
      // Already closed: nothing to release.
    }
  }
}

/**
 * Workspace mounts: every read-only entry read-only at its own path (skill files at SKILLS_MOUNT), outDir writable at its own path,
 * the root created when it is not itself a read-only entry; parents before children. With `handles`
 * (mountSources order, passed to bwrap from fd 3 on) the sources are bound through them, never by path.
 */
export const workspaceMounts = (ws: ResolvedWorkspace, handles?: ReadonlyArray<number>): Array<string> => {
  const ops: Array<{ readonly path: string; readonly args: ReadonlyArray<string> }> = []
  const bind = (kind: "--ro-bind" | "--bind", p: string, index: number, at = p) =>
    handles === undefined ? [kind, p, at] : [`${kind}-fd`, String(FIRST_HANDLE_FD + index), at]
  if (!ws.readOnly.includes(ws.root) && ws.outDir !== ws.root) ops.push({ path: ws.root, args: ["--dir", ws.root] })
  // The skill resource files appear where the read tools show them (SKILLS_MOUNT), not at their host path.
  ws.readOnly.forEach((ro, i) => {
    const at = ro === ws.skills ? SKILLS_MOUNT : ro
    ops.push({ path: at, args: bind("--ro-bind", ro, i, at) })
  })
  ops.push({ path: ws.outDir, args: bind("--bind", ws.outDir, ws.readOnly.length) })
  // Stable sort: at equal depth the root directory comes first, then read-only entries, then outDir.
  return ops.sort((a, b) => depth(a.path) - depth(b.path)).flatMap((o) => o.args)
}

/**
 * The bwrap arguments (without the binary and without the command) for one call: new namespaces, no
 * capabilities, an
 * environment of exactly `env`, the minimal system, private /proc, /dev and /tmp, the workspace, `cwd`.
 * Nothing else of the host is visible: no data dir, no /home, no /root, no host /tmp, no /etc.
 */
export const bwrapArgs = (ws: ResolvedWorkspace, env: Readonly<Record<string, string>>, cwd: string, handles?: ReadonlyArray<number>): Array<string> => [
  ...NAMESPACES,
  "--clearenv",
  ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v]),
  ...systemMounts(),
  ...PRIVATE_MOUNTS,
  // After the private /tmp: a workspace below /tmp is mounted on top of it, nothing else of /tmp is.
  ...workspaceMounts(ws, handles),
  "--chdir",
  cwd,
  "--"
]

/**
 * Where this process finds what a sandboxed call sees at `path`: under the deepest mount source that
 * holds it, reached through that source's handle (`/proc/self/fd/N/…`) when the job has handles, so
 * a host path swapped since the job started cannot stand in for what the sandbox shows. Undefined
 * when the sandbox shows nothing there (outside every read-only entry and outDir).
 */
export const sandboxViewPath = (ws: ResolvedWorkspace, path: string, handles?: ReadonlyArray<number>): string | undefined => {
  const sources = mountSources(ws)
  let best: number | undefined
  sources.forEach((src, i) => {
    const inside = src === "/" || path === src || path.startsWith(`${src}/`)
    // Deeper mounts lie over shallower ones; at equal depth the later one (outDir) is mounted last.
    if (inside && (best === undefined || depth(src) >= depth(sources[best] ?? ""))) best = i
  })
  if (best === undefined) return undefined
  const src = sources[best] ?? ""
  const fd = handles?.[best]
  return fd === undefined ? path : `/proc/self/fd/${fd}${src === "/" ? path : path.slice(src.length)}`
}

/** How the runner confines one job's processes; undefined = unconfined. */
export interface SandboxedRun {
  readonly bwrap: string
  readonly workspace: ResolvedWorkspace
  /** openMountHandles of the workspace, taken at job start; absent = bound by path. */
  readonly handles?: ReadonlyArray<number>
}

/** Why process tools may not run under `status` (for uid `uid`), or undefined when they may. */
export const processToolRefusal = (status: SandboxStatus, config: SandboxConfig, uid: number): string | undefined => {
  if (status._tag === "Unavailable") {
    return `needs the process sandbox, which is not available: ${status.reason}. Remove the grant, make bubblewrap work, or set KINTSUGI_SANDBOX=off to run shell and git unconfined`
  }
  if (status._tag === "Off" && uid === 0 && config.unconfinedRoot !== "allow") {
    return "would run unconfined as root (KINTSUGI_SANDBOX=off): refused. Run the runtime as an unprivileged user, or use the sandbox (KINTSUGI_SANDBOX=auto with bubblewrap)"
  }
  return undefined
}

export interface SandboxShape {
  readonly config: SandboxConfig
  /** How process tools run; the first call with auto/bwrap probes bubblewrap, later calls reuse the answer. */
  readonly status: Effect.Effect<SandboxStatus>
  /** Why a job granting shell or git must be refused here (sandbox missing, or unconfined root), or undefined. */
  readonly refusal: Effect.Effect<string | undefined>
}

export class Sandbox extends Context.Tag("tools/Sandbox")<Sandbox, SandboxShape>() {}

export const makeSandbox = (config: SandboxConfig): SandboxShape => {
  const status = Effect.suspend((): Effect.Effect<SandboxStatus> => {
    if (config.invalidValue !== undefined) {
      return Effect.succeed({ _tag: "Unavailable", reason: `KINTSUGI_SANDBOX=${JSON.stringify(config.invalidValue)} is not one of ${SANDBOX_MODES.join(", ")}` })
    }
    return config.mode === "off" ? Effect.succeed({ _tag: "Off" }) : probeStatus(config.bwrap)
  })
  const uid = process.getuid?.() ?? -1
  return { config, status, refusal: Effect.map(status, (s) => processToolRefusal(s, config, uid)) }
}

export const SandboxLive = (config: SandboxConfig): Layer.Layer<Sandbox> => Layer.sync(Sandbox, () => makeSandbox(config))
