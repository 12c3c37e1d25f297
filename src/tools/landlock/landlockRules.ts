/**
 * What a job's process tree may touch under Landlock, as data: the paths (read-only, writable,
 * devices), the resource limits, the command. The runner builds a `ConfineSpec` per call;
 * confineExec.ts applies it to itself and executes the command. No FFI here.
 */

interface ResourceRlimits {
  /** RLIMIT_DATA: bytes of heap and private writable mappings per process. */
  readonly dataBytes: number
  /** RLIMIT_FSIZE: the largest file a process may write. */
  readonly fileBytes: number
  /** RLIMIT_CPU: seconds of CPU time per process (SIGXCPU, then SIGKILL a second later). */
  readonly cpuSec: number
}

export interface ConfineSpec {
  /** Directories and files readable (and executable), nothing else of them: system paths, opened by name. */
  readonly readOnly: ReadonlyArray<string>
  /** Directories where everything may be read, created, changed and removed, opened by name (the job's temporary directory). */
  readonly writable: ReadonlyArray<string>
  /**
   * Inherited descriptors (O_PATH handles the job opened and checked at its start) granted as read-only
   * or writable: the workspace, never reopened by name, so a path swapped for a symlink later grants nothing.
   */
  readonly readOnlyFds?: ReadonlyArray<number>
  readonly writableFds?: ReadonlyArray<number>
  /** The command's working directory (confineExec changes to it just before execve). */
  readonly cwd?: string
  /** The command's whole environment; confineExec's own is only what Bun needs to start. */
  readonly env?: Readonly<Record<string, string>>
  /** Character devices that may be read and written (/dev/null…). */
  readonly devices: ReadonlyArray<string>
  /**
   * Set by confineExec itself just before execve, only where no `prlimit` can set them after it: Bun's
   * own threads may still allocate in between, and fail at the limit.
   */
  readonly rlimits?: ResourceRlimits
  /** The command; argv[0] an absolute path. */
  readonly argv: ReadonlyArray<string>
}

// Filesystem access rights (linux/landlock.h), and the ABI that introduced each group.
const FS = {
  EXECUTE: 1n << 0n,
  WRITE_FILE: 1n << 1n,
  READ_FILE: 1n << 2n,
  READ_DIR: 1n << 3n,
  REMOVE_DIR: 1n << 4n,
  REMOVE_FILE: 1n << 5n,
  MAKE_CHAR: 1n << 6n,
  MAKE_DIR: 1n << 7n,
  MAKE_REG: 1n << 8n,
  MAKE_SOCK: 1n << 9n,
  MAKE_FIFO: 1n << 10n,
  MAKE_BLOCK: 1n << 11n,
  MAKE_SYM: 1n << 12n,
  REFER: 1n << 13n,
  TRUNCATE: 1n << 14n,
  IOCTL_DEV: 1n << 15n
} as const
const NET_BIND_TCP = 1n << 0n
const NET_CONNECT_TCP = 1n << 1n
const SCOPE_ABSTRACT_UNIX_SOCKET = 1n << 0n
const SCOPE_SIGNAL = 1n << 1n

/** Every filesystem right the kernel's ABI can restrict: all of them are handled, so what no rule grants is denied. */
export const handledFs = (abi: number): bigint => {
  let rights = (1n << 13n) - 1n
  if (abi >= 2) rights |= FS.REFER
  if (abi >= 3) rights |= FS.TRUNCATE
  if (abi >= 5) rights |= FS.IOCTL_DEV
  return rights
}
/** TCP bind and connect (ABI 4): handled with no port granted, so both are denied. */
export const handledNet = (abi: number): bigint => (abi >= 4 ? NET_BIND_TCP | NET_CONNECT_TCP : 0n)
/** Signals and abstract Unix sockets stay inside the job's domain (ABI 6). */
export const scopes = (abi: number): bigint => (abi >= 6 ? SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL : 0n)

/** The rights a rule on a file (not a directory) may carry. */
export const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV
export const READ_RIGHTS = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR
/** Everything in a writable directory but creating device nodes. */
export const WRITE_RIGHTS =
  READ_RIGHTS |
  FS.WRITE_FILE |
  FS.REMOVE_DIR |
  FS.REMOVE_FILE |
  FS.MAKE_DIR |
  FS.MAKE_REG |
  FS.MAKE_SOCK |
  FS.MAKE_FIFO |
  FS.MAKE_SYM |
  FS.REFER |
  FS.TRUNCATE
export const DEVICE_RIGHTS = FS.READ_FILE | FS.WRITE_FILE | FS.IOCTL_DEV

/** The character devices a shell needs; nothing else of /dev. */
export const JOB_DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"] as const

export const encodeSpec = (spec: ConfineSpec): string => Buffer.from(JSON.stringify(spec), "utf8").toString("base64url")

type Json = { readonly [k: string]: unknown }
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v)
const isStrings = (v: unknown): v is ReadonlyArray<string> => Array.isArray(v) && v.every((s) => typeof s === "string")
const isFds = (v: unknown): v is ReadonlyArray<number> => Array.isArray(v) && v.every((n) => Number.isSafeInteger(n) && n >= 3)
const isPositive = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v > 0
const optional = <A>(v: unknown, is: (x: unknown) => x is A): v is A | undefined => v === undefined || is(v)
const isEnv = (v: unknown): v is Readonly<Record<string, string>> => isObject(v) && Object.values(v).every((s) => typeof s === "string")
const isRlimits = (v: unknown): v is ResourceRlimits =>
  isObject(v) && isPositive(v["dataBytes"]) && isPositive(v["fileBytes"]) && isPositive(v["cpuSec"])

/**
 * The spec confineExec.ts was given, every field checked, or undefined when it is not one. A
 * hand-written decoder rather than a Schema: confineExec runs once per call and loads nothing it can
 * do without (Effect's Schema would double its start).
 */
export const decodeSpec = (text: string | undefined): ConfineSpec | undefined => {
  if (text === undefined) return undefined
  let v: unknown
  try {
    v = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  if (!isObject(v)) return undefined
  const { readOnly, writable, readOnlyFds, writableFds, devices, cwd, env, rlimits, argv } = v
  if (!isStrings(readOnly) || !isStrings(writable) || !isStrings(devices) || !isStrings(argv) || argv.length === 0) return undefined
  if (!optional(readOnlyFds, isFds) || !optional(writableFds, isFds) || !optional(env, isEnv) || !optional(rlimits, isRlimits))
    return undefined
  if (cwd !== undefined && typeof cwd !== "string") return undefined
  return {
    readOnly,
    writable,
    devices,
    argv,
    ...(readOnlyFds === undefined ? {} : { readOnlyFds }),
    ...(writableFds === undefined ? {} : { writableFds }),
    ...(cwd === undefined ? {} : { cwd }),
    ...(env === undefined ? {} : { env }),
    ...(rlimits === undefined ? {} : { rlimits })
  }
}
