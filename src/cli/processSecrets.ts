/**
 * Secrets hygiene of a server command (ARCHITECTURE §10): the process makes itself non-dumpable and
 * re-executes itself (same pid, Linux `execve`) without its secret variables, so that
 * /proc/<pid>/environ holds none of them; their values cross the exec on an inherited pipe and then
 * live only in memory, behind the ConfigProvider that the composition root installs.
 */
import { dlopen, FFIType, ptr } from "bun:ffi"
import { closeSync, readFileSync, writeSync } from "node:fs"
import { makeNonDumpable } from "../kernel/nonDumpable.ts"

/** Variables that hold secrets; each may instead be given as `<NAME>_FILE` (a path whose content is the value). */
export const SECRET_VARIABLES = ["KINTSUGI_ADMIN_PASSWORD", "KINTSUGI_SECRET_KEY", "DATABASE_URL", "OTEL_EXPORTER_OTLP_HEADERS"] as const

/** Names the inherited pipe after the re-exec (a number, never a secret). */
export const SECRETS_FD_VARIABLE = "KINTSUGI_SECRETS_FD"

export interface ProcessSecrets {
  /** The secret values, in memory only. */
  readonly values: ReadonlyMap<string, string>
  /** What the environment holds now: "clean" (re-executed or nothing to hide) or why it is not. */
  readonly environment: "clean" | { readonly notClean: string }
  /** Whether prctl(PR_SET_DUMPABLE, 0) succeeded. */
  readonly nonDumpable: boolean
}

type Env = Record<string, string | undefined>

/** The secrets named by `env`: plain variables first, else the content of `<NAME>_FILE` (one trailing newline dropped). */
export const collectSecrets = (env: Env, readFile: (path: string) => string = (p) => readFileSync(p, "utf8")): Map<string, string> => {
  const values = new Map<string, string>()
  for (const name of SECRET_VARIABLES) {
    const direct = env[name]
    const file = env[`${name}_FILE`]
    if (direct !== undefined && direct !== "") values.set(name, direct)
    else if (file !== undefined && file !== "") values.set(name, readFile(file).replace(/\r?\n$/, ""))
  }
  return values
}

const readInherited = (fdText: string): Map<string, string> => {
  const fd = Number(fdText)
  if (!Number.isInteger(fd) || fd < 3) throw new Error(`${SECRETS_FD_VARIABLE} is not a file descriptor`)
  try {
    const parsed: unknown = JSON.parse(readFileSync(fd, "utf8"))
    const values = new Map<string, string>()
    if (parsed !== null && typeof parsed === "object") {
      for (const [k, v] of Object.entries(parsed)) if (typeof v === "string") values.set(k, v)
    }
    return values
  } finally {
    closeSync(fd)
  }
}

const libc = () =>
  dlopen("libc.so.6", {
    pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 }
  })

/** A NULL-terminated `char*[]`; the buffers are kept in `keep` until the call. */
const cStrings = (items: ReadonlyArray<string>, keep: Array<Uint8Array>): BigUint64Array => {
  const array = new BigUint64Array(items.length + 1)
  items.forEach((item, i) => {
    const bytes = Buffer.from(`${item}\0`)
    keep.push(bytes)
    array[i] = BigInt(ptr(bytes))
  })
  return array
}

/**
 * Replaces this process image with the same command line and an environment without the secret
 * variables (nor their `_FILE` names); the values go through a pipe that the new image reads once.
 * Returns only when the exec failed (the reason).
 */
const reexecWithout = (values: ReadonlyMap<string, string>, env: Env): string => {
  let lib: ReturnType<typeof libc>
  try {
    lib = libc()
  } catch {
    return "libc is not available"
  }
  const fds = new Int32Array(2)
  // Flags 0: unlike Bun's own descriptors, the read end must survive the exec.
  if (lib.symbols.pipe2(ptr(fds), 0) !== 0) return "pipe2 failed"
  const [readFd = -1, writeFd = -1] = fds
  const payload = Buffer.from(JSON.stringify(Object.fromEntries(values)))
  // A pipe holds 64 KiB: a few secrets always fit, so this write never blocks.
  if (payload.length > 60_000) {
    closeSync(readFd)
    closeSync(writeFd)
    return "the secrets are too large to pass on"
  }
  writeSync(writeFd, payload)
  closeSync(writeFd)
  const hidden = new Set<string>(SECRET_VARIABLES.flatMap((n) => [n, `${n}_FILE`]))
  const environment = Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined && !hidden.has(e[0]) && e[0] !== SECRETS_FD_VARIABLE)
    .map(([k, v]) => `${k}=${v}`)
  environment.push(`${SECRETS_FD_VARIABLE}=${readFd}`)
  const keep: Array<Uint8Array> = []
  const file = Buffer.from(`${process.execPath}\0`)
  const argv = cStrings([process.execPath, ...process.execArgv, ...process.argv.slice(1)], keep)
  const envp = cStrings(environment, keep)
  lib.symbols.execve(ptr(file), ptr(argv), ptr(envp))
  closeSync(readFd)
  return "execve failed"
}

let secured: ProcessSecrets | undefined

/**
 * Call first thing in a long-running server command, before any thread or secret use (src/cli.ts does,
 * before the CLI framework loads, so the first run re-executes at once). Makes the process
 * non-dumpable; on the first run, when secret variables are set, re-executes it without them (never
 * returns then); on the re-executed run, reads the values back. Off Linux, or when the exec fails, the
 * variables are removed from `process.env` and `environment` says why the process environment still
 * holds them. Later calls return the first call's answer (the inherited pipe is read once).
 */
export const secureProcessSecrets = (): ProcessSecrets => (secured ??= secure())

/** The light part of this module loads nothing but bun:ffi and node:fs: it runs before anything else. */
const secure = (): ProcessSecrets => {
  const nonDumpable = makeNonDumpable()
  // Reads and writes process.env directly, not through Config: it must see
  // and delete the real variables (a ConfigProvider is a read-only view), and everything else reads
  // the secrets it collected through `secretsConfigProvider`.
  const env: Env = process.env
  const inherited = env[SECRETS_FD_VARIABLE]
  if (inherited !== undefined) {
    delete process.env[SECRETS_FD_VARIABLE]
    return { values: readInherited(inherited), environment: "clean", nonDumpable }
  }
  const values = collectSecrets(env)
  const inEnvironment = SECRET_VARIABLES.some((n) => (env[n] ?? "") !== "")
  if (!inEnvironment) return { values, environment: "clean", nonDumpable }
  const why = process.platform === "linux" ? reexecWithout(values, env) : "re-exec is implemented on Linux only"
  for (const name of SECRET_VARIABLES) delete process.env[name]
  return { values, environment: { notClean: why }, nonDumpable }
}
