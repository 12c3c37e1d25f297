/**
 * What a job's process tree may touch under Landlock, as data: the paths (read-only, writable,
 * devices), the resource limits, the command. The runner builds a `ConfineSpec` per call;
 * confineExec.ts applies it to itself and executes the command. No FFI here.
 */

export interface ResourceRlimits {
  /** RLIMIT_DATA: bytes of heap and private writable mappings per process. */
  readonly dataBytes: number
  /** RLIMIT_FSIZE: the largest file a process may write. */
  readonly fileBytes: number
  /** RLIMIT_CPU: seconds of CPU time per process (SIGXCPU, then SIGKILL a second later). */
  readonly cpuSec: number
}

export interface ConfineSpec {
  /** Directories and files readable (and executable), nothing else of them. */
  readonly readOnly: ReadonlyArray<string>
  /** Directories where everything may be read, created, changed and removed. */
  readonly writable: ReadonlyArray<string>
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
export const FS = {
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
export const NET_BIND_TCP = 1n << 0n
export const NET_CONNECT_TCP = 1n << 1n
export const SCOPE_ABSTRACT_UNIX_SOCKET = 1n << 0n
export const SCOPE_SIGNAL = 1n << 1n

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
  READ_RIGHTS | FS.WRITE_FILE | FS.REMOVE_DIR | FS.REMOVE_FILE | FS.MAKE_DIR | FS.MAKE_REG | FS.MAKE_SOCK | FS.MAKE_FIFO | FS.MAKE_SYM | FS.REFER | FS.TRUNCATE
export const DEVICE_RIGHTS = FS.READ_FILE | FS.WRITE_FILE | FS.IOCTL_DEV

/** The character devices a shell needs; nothing else of /dev. */
export const JOB_DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"] as const

export const encodeSpec = (spec: ConfineSpec): string => Buffer.from(JSON.stringify(spec), "utf8").toString("base64url")

/** The spec confineExec.ts was given, or undefined when it is not one. */
export const decodeSpec = (text: string | undefined): ConfineSpec | undefined => {
  if (text === undefined) return undefined
  try {
    const v: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
    if (typeof v !== "object" || v === null) return undefined
    const o = v as { readonly [k: string]: unknown }
    const strings = (x: unknown): x is ReadonlyArray<string> => Array.isArray(x) && x.every((s) => typeof s === "string")
    const r = o["rlimits"] as { readonly [k: string]: unknown } | undefined
    const num = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x > 0
    if (!strings(o["readOnly"]) || !strings(o["writable"]) || !strings(o["devices"]) || !strings(o["argv"]) || o["argv"].length === 0) return undefined
    const base = { readOnly: o["readOnly"], writable: o["writable"], devices: o["devices"], argv: o["argv"] }
    if (r === undefined) return base
    if (!num(r["dataBytes"]) || !num(r["fileBytes"]) || !num(r["cpuSec"])) return undefined
    return { ...base, rlimits: { dataBytes: r["dataBytes"], fileBytes: r["fileBytes"], cpuSec: r["cpuSec"] } }
  } catch {
    return undefined
  }
}
