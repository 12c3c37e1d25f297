/**
 * The Linux calls the Landlock mechanism needs and Bun does not offer, through libc (bun:ffi): the
 * Landlock ABI and ruleset calls, prctl (no_new_privs, parent-death signal, seccomp), setrlimit and
 * execve. Loaded only by the process that confines itself (confineExec.ts) and by the probe.
 */
import { dlopen, FFIType, ptr, read } from "bun:ffi"

// Landlock's system call numbers are the same on every architecture (asm-generic, 444–446).
const SYS_LANDLOCK_CREATE_RULESET = 444n
const SYS_LANDLOCK_ADD_RULE = 445n
const SYS_LANDLOCK_RESTRICT_SELF = 446n
const LANDLOCK_CREATE_RULESET_VERSION = 1n
const LANDLOCK_RULE_PATH_BENEATH = 1n

const SIG_SETMASK = 2
const PR_SET_PDEATHSIG = 1
const PR_CAPBSET_DROP = 24
const PR_CAP_AMBIENT = 47
const PR_CAP_AMBIENT_CLEAR_ALL = 4
/** Capability numbers the kernel may know (CAP_LAST_CAP is 40 in Linux 6.x); higher ones are refused with EINVAL. */
const CAP_NUMBERS = 64
const LINUX_CAPABILITY_VERSION_3 = 0x20080522
const PR_SET_SECCOMP = 22
const PR_SET_NO_NEW_PRIVS = 38
const SECCOMP_MODE_FILTER = 2

let libc: ReturnType<typeof open> | undefined
const open = () =>
  dlopen(process.platform === "linux" ? "libc.so.6" : "libc", {
    syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
    prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
    setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    capset: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    signal: { args: [FFIType.i32, FFIType.u64], returns: FFIType.u64 },
    sigprocmask: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    execve: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
    strerror: { args: [FFIType.i32], returns: FFIType.cstring }
  })
const calls = () => (libc ??= open()).symbols

/** errno of the last failed call, with its text. */
const lastError = (what: string): Error => {
  const c = calls()
  const at = c.__errno_location()
  const errno = at === null ? 0 : read.i32(at, 0)
  return new Error(`${what}: ${String(c.strerror(errno))} (errno ${errno})`)
}

const check = (result: number | bigint, what: string): number => {
  const n = Number(result)
  if (n < 0) throw lastError(what)
  return n
}

/** The Landlock ABI version the kernel offers; 0 when it has none (disabled or too old). */
export const landlockAbi = (): number => {
  if (process.platform !== "linux") return 0
  const v = Number(calls().syscall(SYS_LANDLOCK_CREATE_RULESET, 0n, 0n, LANDLOCK_CREATE_RULESET_VERSION, 0n))
  return v > 0 ? v : 0
}

/** struct landlock_ruleset_attr, cut to what the ABI knows (8 bytes up to ABI 3, 16 for 4–5, 24 from 6). */
export const createRuleset = (abi: number, handledFs: bigint, handledNet: bigint, scoped: bigint): number => {
  const attr = new BigUint64Array([handledFs, handledNet, scoped])
  const size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8
  return check(calls().syscall(SYS_LANDLOCK_CREATE_RULESET, BigInt(ptr(attr)), BigInt(size), 0n, 0n), "landlock_create_ruleset")
}

/** Grants `access` beneath the file or directory open as `parentFd` (struct landlock_path_beneath_attr, packed: u64 + s32). */
export const addPathRule = (ruleset: number, access: bigint, parentFd: number): void => {
  const attr = new Uint8Array(12)
  const view = new DataView(attr.buffer)
  view.setBigUint64(0, access, true)
  view.setInt32(8, parentFd, true)
  check(calls().syscall(SYS_LANDLOCK_ADD_RULE, BigInt(ruleset), LANDLOCK_RULE_PATH_BENEATH, BigInt(ptr(attr)), 0n), "landlock_add_rule")
}

/** Confines the calling thread (and what it executes) to the ruleset; needs no_new_privs first. */
export const restrictSelf = (ruleset: number): void => {
  check(calls().syscall(SYS_LANDLOCK_RESTRICT_SELF, BigInt(ruleset), 0n, 0n, 0n), "landlock_restrict_self")
}

/** No set-user-ID or file capability ever raises privileges again, for this thread and what it executes. */
export const setNoNewPrivs = (): void => {
  check(calls().prctl(PR_SET_NO_NEW_PRIVS, 1n, 0n, 0n, 0n), "prctl(PR_SET_NO_NEW_PRIVS)")
}

/** The signal this process gets when the thread that started it ends (kept across execve). */
export const setParentDeathSignal = (signal: number): void => {
  check(calls().prctl(PR_SET_PDEATHSIG, BigInt(signal), 0n, 0n, 0n), "prctl(PR_SET_PDEATHSIG)")
}

/** Installs a seccomp BPF program (bytes of struct sock_filter[]) on the calling thread; needs no_new_privs. */
export const installSeccomp = (filter: Uint8Array): void => {
  // struct sock_fprog: unsigned short len, (padding), struct sock_filter *filter.
  const prog = new BigUint64Array(2)
  prog[0] = BigInt(filter.length / 8)
  prog[1] = BigInt(ptr(filter))
  check(calls().prctl(PR_SET_SECCOMP, BigInt(SECCOMP_MODE_FILTER), BigInt(ptr(prog)), 0n, 0n), "prctl(PR_SET_SECCOMP)")
}

/**
 * Gives up every capability for good: the bounding set emptied (so executing anything, as root too,
 * grants none), the ambient set cleared, then the effective, permitted and inheritable sets zeroed.
 * A process without CAP_SETPCAP has an empty bounding set to drop only when it holds none already.
 */
export const dropCapabilities = (): void => {
  const c = calls()
  for (let cap = 0; cap < CAP_NUMBERS; cap++) {
    if (c.prctl(PR_CAPBSET_DROP, BigInt(cap), 0n, 0n, 0n) !== 0) {
      const errno = read.i32(c.__errno_location() ?? 0, 0)
      // EINVAL: no such capability (past the kernel's last). EPERM: no CAP_SETPCAP, so nothing could be raised either.
      if (errno === 22) break
      if (errno === 1 && (process.getuid?.() ?? 0) !== 0) break
      throw lastError(`prctl(PR_CAPBSET_DROP, ${cap})`)
    }
  }
  check(c.prctl(PR_CAP_AMBIENT, BigInt(PR_CAP_AMBIENT_CLEAR_ALL), 0n, 0n, 0n), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
  // struct __user_cap_header_struct { u32 version; int pid } and two struct __user_cap_data_struct { u32 effective, permitted, inheritable }.
  const header = new Uint32Array([LINUX_CAPABILITY_VERSION_3, 0])
  const data = new Uint32Array(6)
  check(c.capset(ptr(header), ptr(data)), "capset")
}

export const RLIMIT = { cpu: 0, fsize: 1, data: 2, nproc: 6, nofile: 7, as: 9 } as const

/** Sets a resource limit of this process (kept across execve and fork). */
export const setRlimit = (resource: number, soft: bigint, hard: bigint): void => {
  const limit = new BigUint64Array([soft, hard])
  check(calls().setrlimit(resource, ptr(limit)), `setrlimit(${resource})`)
}

const cString = (s: string): Buffer => Buffer.from(`${s}\0`, "utf8")

/**
 * Prepares execve of `argv` (argv[0] an absolute path) with exactly `env`: every buffer is built now,
 * so the returned call allocates nothing (it runs after the memory limit is set). It returns only by throwing.
 */
export const prepareExecve = (argv: ReadonlyArray<string>, env: Readonly<Record<string, string>>): (() => never) => {
  const keep: Array<Buffer> = []
  const array = (items: ReadonlyArray<string>): BigUint64Array => {
    const out = new BigUint64Array(items.length + 1)
    items.forEach((s, i) => {
      const b = cString(s)
      keep.push(b)
      out[i] = BigInt(ptr(b))
    })
    return out
  }
  const path = cString(argv[0] ?? "")
  const args = array(argv)
  const envp = array(Object.entries(env).map(([k, v]) => `${k}=${v}`))
  const c = calls()
  const pathPtr = ptr(path)
  const argsPtr = ptr(args)
  const envPtr = ptr(envp)
  // sigset_t is 128 bytes in glibc; all zero = nothing blocked.
  const emptySet = new Uint8Array(128)
  const emptySetPtr = ptr(emptySet)
  return () => {
    // Ignored signals and the blocked mask survive execve: the command starts with Bun's (SIGPIPE,
    // SIGXFSZ ignored…) undone, as a posix_spawn with default signals would start it.
    for (let sig = 1; sig < 65; sig++) if (sig !== 9 && sig !== 19) c.signal(sig, 0n)
    c.sigprocmask(SIG_SETMASK, emptySetPtr, null)
    c.execve(pathPtr, argsPtr, envPtr)
    void keep
    throw lastError(`execve ${argv[0] ?? ""}`)
  }
}
