/**
 * The process sandbox (ARCHITECTURE §10): whether `shell` and `git` run inside bubblewrap, the probe
 * that decides it once per process, and the bwrap argv that confines one call to the job's workspace.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import { RESOURCE_VARIABLES } from "./jobResources.ts"
import { closeSync, constants, openSync, readlinkSync } from "node:fs"
import { SKILLS_MOUNT } from "../job/confinement.ts"
import {
  NAMESPACES,
  pendingLandlockProbe,
  pendingProbe,
  probeLandlock,
  PRIVATE_MOUNTS,
  probeBwrap,
  SANDBOX_ENV,
  SANDBOX_MODES,
  type SandboxConfig,
  sandboxConfigFromEnv,
  type SandboxStatus,
  systemMounts,
  UNCONFINED_ROOT_ENV
} from "./sandboxProbe.ts"

export {
  CONFINE_SCRIPT,
  forgetProbes,
  probeBwrap,
  probeLandlock,
  SAFE_PATH,
  SANDBOX_ENV,
  SANDBOX_MODES,
  SANDBOX_PROBED_ENV,
  type SandboxConfig,
  sandboxConfigFromEnv,
  type SandboxMode,
  type SandboxStatus,
  startProbe,
  startProbeFromEnv,
  systemMounts,
  systemPaths,
  UNCONFINED_ROOT_ENV
} from "./sandboxProbe.ts"
import type { ResolvedWorkspace } from "./Tool.ts"

/** `sandboxConfigFromEnv` over the configuration (the environment unless a ConfigProvider says otherwise); never fails. */
export const sandboxConfig: Effect.Effect<SandboxConfig> = Effect.forEach(
  [SANDBOX_ENV, UNCONFINED_ROOT_ENV, ...Object.values(RESOURCE_VARIABLES)],
  (name) => Effect.map(Config.string(name).pipe(Config.option), (value) => [name, Option.getOrUndefined(value)] as const)
).pipe(
  Effect.map((pairs) => sandboxConfigFromEnv(Object.fromEntries(pairs))),
  // A value Config cannot read as a string does not exist in an environment; fail closed all the same.
  Effect.orElseSucceed((): SandboxConfig => ({ mode: "bwrap", invalidValue: "" }))
)

/** probeBwrap's answer, waiting for a probe startProbe started rather than running another. */
const probeStatus = (bwrap: string = "bwrap"): Effect.Effect<SandboxStatus> => {
  const pending = pendingProbe(bwrap)
  return pending === undefined ? Effect.sync(() => probeBwrap(bwrap)) : Effect.promise(() => pending)
}

/** probeLandlock's answer, waiting for a probe already under way. */
const landlockStatus = (script?: string): Effect.Effect<SandboxStatus> =>
  Effect.suspend(() => {
    const pending = pendingLandlockProbe(script)
    return pending === undefined ? Effect.sync(() => probeLandlock(script)) : Effect.promise(() => pending)
  })

/** The Landlock ABI `auto` takes: 6 scopes signals and abstract Unix sockets to the job; below it only KINTSUGI_SANDBOX=landlock does. */
export const AUTO_LANDLOCK_ABI = 6

/** auto: bubblewrap where it works, else Landlock; unavailable (naming both reasons) when neither does. */
const autoStatus = (config: SandboxConfig): Effect.Effect<SandboxStatus> =>
  Effect.flatMap(probeStatus(config.bwrap), (b) =>
    b._tag !== "Unavailable"
      ? Effect.succeed(b)
      : Effect.map(landlockStatus(config.landlock), (l): SandboxStatus => {
          if (l._tag === "Unavailable") return { _tag: "Unavailable", reason: `${b.reason}; ${l.reason}` }
          if (l._tag === "Landlock" && l.abi < AUTO_LANDLOCK_ABI) {
            return {
              _tag: "Unavailable",
              reason: `${b.reason}; Landlock ABI ${l.abi} (below ${AUTO_LANDLOCK_ABI}, Linux 6.12) cannot keep a job's signals from the server's processes: set KINTSUGI_SANDBOX=landlock to accept that`
            }
          }
          return l
        })
  )

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
export const bwrapArgs = (
  ws: ResolvedWorkspace,
  env: Readonly<Record<string, string>>,
  cwd: string,
  handles?: ReadonlyArray<number>,
  tmpDir?: string
): Array<string> => [
  ...NAMESPACES,
  "--clearenv",
  ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v]),
  ...systemMounts(),
  // The job's temporary directory at /tmp (its size is watched); a bare tmpfs only without one.
  ...(tmpDir === undefined ? PRIVATE_MOUNTS : [...PRIVATE_MOUNTS.slice(0, 4), "--bind", tmpDir, "/tmp"]),
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

/** How the runner confines one job's processes under Landlock: this Bun runs confineExec.ts around each command. */
export interface LandlockRun {
  readonly bun: string
  readonly script: string
  readonly workspace: ResolvedWorkspace
  /** openMountHandles of the workspace, taken at job start; absent = granted by path. */
  readonly handles?: ReadonlyArray<number>
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
  if (config.resourceProblems !== undefined && config.resourceProblems.length > 0) {
    return `cannot be bounded: ${config.resourceProblems.join("; ")}`
  }
  if (status._tag === "Unavailable") {
    return `needs the process sandbox, which is not available: ${status.reason}. Remove the grant, make bubblewrap (user namespaces) or Landlock (Linux 5.13+ with landlock in CONFIG_LSM or lsm=) work, or set KINTSUGI_SANDBOX=off to run shell and git unconfined`
  }
  if (status._tag === "Off" && uid === 0 && config.unconfinedRoot !== "allow") {
    return "would run unconfined as root (KINTSUGI_SANDBOX=off): refused. Run the runtime as an unprivileged user, or use the sandbox (KINTSUGI_SANDBOX=auto with bubblewrap or Landlock)"
  }
  return undefined
}

/** The mechanism in force, in a few words: what /readyz, the start-up log and the portal's home page name. */
export const sandboxName = (status: SandboxStatus): string => {
  switch (status._tag) {
    case "Bwrap":
      return "bubblewrap"
    case "Landlock":
      return `landlock (ABI ${status.abi})`
    case "Off":
      return "off (unconfined)"
    case "Unavailable":
      return "unavailable"
  }
}

export interface SandboxShape {
  readonly config: SandboxConfig
  /** How process tools run; the first call probes (bubblewrap, then Landlock for auto), later calls reuse the answer. */
  readonly status: Effect.Effect<SandboxStatus>
  /** Why a job granting shell or git must be refused here (sandbox missing, or unconfined root), or undefined. */
  readonly refusal: Effect.Effect<string | undefined>
}

export class Sandbox extends Context.Tag("tools/Sandbox")<Sandbox, SandboxShape>() {}

export const makeSandbox = (config: SandboxConfig): SandboxShape => {
  const status = Effect.suspend((): Effect.Effect<SandboxStatus> => {
    if (config.invalidValue !== undefined) {
      return Effect.succeed({
        _tag: "Unavailable",
        reason: `KINTSUGI_SANDBOX=${JSON.stringify(config.invalidValue)} is not one of ${SANDBOX_MODES.join(", ")}`
      })
    }
    switch (config.mode) {
      case "off":
        return Effect.succeed({ _tag: "Off" })
      case "bwrap":
        return probeStatus(config.bwrap)
      case "landlock":
        return landlockStatus(config.landlock)
      case "auto":
        return autoStatus(config)
    }
  })
  const uid = process.getuid?.() ?? -1
  return { config, status, refusal: Effect.map(status, (s) => processToolRefusal(s, config, uid)) }
}

export const SandboxLive = (config: SandboxConfig): Layer.Layer<Sandbox> => Layer.sync(Sandbox, () => makeSandbox(config))
