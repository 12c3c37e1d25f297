/**
 * Seccomp BPF programs, built as bytes (struct sock_filter[]): a check of the architecture, then one
 * rule per denied system call (an errno; optionally only when a flag bit of its first argument is set,
 * or unless its arguments have given values).
 * The process runner's Landlock mechanism installs `jobFilter()`; tests that stand in for a default
 * container install `containerFilter()` (no new namespaces, no mounts), as Docker's profile does.
 */

export type SeccompArch = "x64" | "arm64"

/** An argument of a call (0–5) and the value it must have, compared in all 64 bits. */
interface ArgIs {
  readonly arg: 0 | 1 | 2 | 3 | 4 | 5
  readonly is: number
}

/**
 * One denied call: by name, the errno it returns, and at most one condition: `whenArg0Has` denies only
 * when `arg0 & whenArg0Has` is non-zero (low word); `unlessArgs` denies unless every listed argument has its value.
 */
export type DenyRule = {
  readonly call: SyscallName
  readonly errno: number
} & (
  | { readonly whenArg0Has?: number; readonly unlessArgs?: undefined }
  | { readonly unlessArgs: ReadonlyArray<ArgIs>; readonly whenArg0Has?: undefined }
)

const SYSCALLS = {
  x64: {
    socket: 41,
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    unshare: 272,
    setns: 308,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    clone: 56,
    clone3: 435,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    kexec_load: 246,
    kexec_file_load: 320,
    reboot: 169,
    swapon: 167,
    swapoff: 168,
    acct: 163,
    prlimit64: 302,
    setpriority: 141,
    sched_setaffinity: 203,
    sched_setscheduler: 144,
    sched_setparam: 142,
    sched_setattr: 314,
    ioprio_set: 251,
    truncate: 76,
    setsid: 112,
    setpgid: 109,
    memfd_create: 319,
    memfd_secret: 447,
    shmget: 29,
    shmat: 30,
    shmctl: 31,
    msgget: 68,
    msgsnd: 69,
    msgrcv: 70,
    msgctl: 71,
    semget: 64,
    semop: 65,
    semtimedop: 220,
    semctl: 66
  },
  arm64: {
    socket: 198,
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    userfaultfd: 282,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    unshare: 97,
    setns: 268,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    clone: 220,
    clone3: 435,
    open_tree: 428,
    move_mount: 429,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    kexec_load: 104,
    kexec_file_load: 294,
    reboot: 142,
    swapon: 224,
    swapoff: 225,
    acct: 89,
    prlimit64: 261,
    setpriority: 140,
    sched_setaffinity: 122,
    sched_setscheduler: 119,
    sched_setparam: 118,
    sched_setattr: 274,
    ioprio_set: 30,
    truncate: 45,
    setsid: 157,
    setpgid: 154,
    memfd_create: 279,
    memfd_secret: 447,
    shmget: 194,
    shmat: 196,
    shmctl: 195,
    msgget: 186,
    msgsnd: 189,
    msgrcv: 188,
    msgctl: 187,
    semget: 190,
    semop: 193,
    semtimedop: 192,
    semctl: 191
  }
} as const satisfies Record<SeccompArch, Record<string, number>>

type SyscallName = keyof (typeof SYSCALLS)["x64"]

const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 }
/** x32 system calls on x86-64 carry this bit; a filter for x86-64 refuses them all. */
const X32_SYSCALL_BIT = 0x40000000

const EPERM = 1
const EACCES = 13
const ENOSYS = 38

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME. */
const CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JSET_K = 0x45
const JGE_K = 0x35
const RET_K = 0x06
const RET_KILL_PROCESS = 0x80000000
const RET_ERRNO = 0x00050000
const RET_ALLOW = 0x7fff0000
// Offsets in struct seccomp_data: nr, arch, instruction_pointer, then args[6] of 8 bytes each. Both
// architectures are little-endian: an argument's low word comes first.
const OFF_NR = 0
const OFF_ARCH = 4
const argLow = (arg: number): number => 16 + 8 * arg
const argHigh = (arg: number): number => 16 + 8 * arg + 4
const WORD = 2 ** 32

type Insn = readonly [code: number, jt: number, jf: number, k: number]

/**
 * One rule's instructions before assembly. A jump is 0 (the next instruction) or names a place in the
 * rule: "deny" (its errno), "reload" (nr loaded again after an argument was), "next" (the next rule).
 * A bare place in the list marks where that place is.
 */
type Place = "deny" | "reload" | "next"
type Step = readonly [code: number, jt: Place | 0, jf: Place | 0, k: number] | Place

/** The rule's steps as instructions: each named jump becomes the count of instructions it skips, which BPF holds in 8 bits. */
const assemble = (steps: ReadonlyArray<Step>): Array<Insn> => {
  const at = new Map<Place, number>()
  const insns: Array<readonly [number, Place | 0, Place | 0, number]> = []
  for (const step of steps) {
    if (typeof step === "string") at.set(step, insns.length)
    else insns.push(step)
  }
  return insns.map(([code, jt, jf, k], i): Insn => {
    const skip = (to: Place | 0): number => {
      if (to === 0) return 0
      const target = at.get(to)
      if (target === undefined || target <= i || target - i - 1 > 255)
        throw new Error(`seccomp filter: no forward jump to ${to} from instruction ${i}`)
      return target - i - 1
    }
    return [code, skip(jt), skip(jf), k]
  })
}

/**
 * A rule as steps. On entry and on leaving for the next rule the accumulator holds nr: a rule that
 * loads an argument reloads nr before the next rule.
 */
const ruleSteps = (nr: number, rule: DenyRule): Array<Step> => {
  const isCall: Step = [JEQ_K, 0, "next", nr]
  const deny: Step = [RET_K, 0, 0, RET_ERRNO | (rule.errno & 0xffff)]
  const reload: Step = [LD_W_ABS, 0, 0, OFF_NR]
  if (rule.whenArg0Has !== undefined) {
    // A flag set in arg0's low word denies; none set lets the call pass.
    return [isCall, [LD_W_ABS, 0, 0, argLow(0)], [JSET_K, "deny", "reload", rule.whenArg0Has], "deny", deny, "reload", reload, "next"]
  }
  if (rule.unlessArgs !== undefined) {
    if (rule.unlessArgs.length === 0) throw new Error(`seccomp filter: ${rule.call} has an empty unlessArgs`)
    // Both words of each argument, so no value passes for another by its low word alone.
    const words = rule.unlessArgs.flatMap(
      ({ arg, is }) =>
        [
          [argLow(arg), is % WORD],
          [argHigh(arg), Math.floor(is / WORD)]
        ] as const
    )
    // Any word that differs denies; the last one matching lets the call pass.
    const checks = words.flatMap(
      ([offset, value], i): Array<Step> => [
        [LD_W_ABS, 0, 0, offset],
        [JEQ_K, i === words.length - 1 ? "reload" : 0, "deny", value]
      ]
    )
    return [isCall, ...checks, "deny", deny, "reload", reload, "next"]
  }
  return [isCall, "deny", deny, "next"]
}

/** The architecture this process runs on, or undefined where no filter is defined. */
export const currentArch = (): SeccompArch | undefined => (process.arch === "x64" || process.arch === "arm64" ? process.arch : undefined)

/** A filter that returns each rule's errno for its call and allows everything else; other architectures are killed. */
export const buildFilter = (arch: SeccompArch, rules: ReadonlyArray<DenyRule>): Uint8Array => {
  const prog: Array<Insn> = [
    [LD_W_ABS, 0, 0, OFF_ARCH],
    [JEQ_K, 1, 0, AUDIT_ARCH[arch]],
    [RET_K, 0, 0, RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, OFF_NR]
  ]
  if (arch === "x64") prog.push([JGE_K, 0, 1, X32_SYSCALL_BIT], [RET_K, 0, 0, RET_ERRNO | ENOSYS])
  for (const rule of rules) prog.push(...assemble(ruleSteps(SYSCALLS[arch][rule.call], rule)))
  prog.push([RET_K, 0, 0, RET_ALLOW])
  const bytes = new Uint8Array(prog.length * 8)
  const view = new DataView(bytes.buffer)
  prog.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true)
    view.setUint8(i * 8 + 2, jt)
    view.setUint8(i * 8 + 3, jf)
    view.setUint32(i * 8 + 4, k >>> 0, true)
  })
  return bytes
}

const NAMESPACE_AND_MOUNT: ReadonlyArray<DenyRule> = [
  { call: "unshare", errno: EPERM },
  { call: "setns", errno: EPERM },
  { call: "clone", errno: EPERM, whenArg0Has: CLONE_NEW_ANY },
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone.
  { call: "clone3", errno: ENOSYS },
  ...(
    ["mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"] as const
  ).map((call): DenyRule => ({ call, errno: EPERM }))
]

/** setpriority's `which` for one process, and ioprio_set's. */
const PRIO_PROCESS = 0
const IOPRIO_WHO_PROCESS = 1

/**
 * Calls that change another process of the same user (a lowered CPU limit kills it; nice, scheduling,
 * CPU set and I/O class starve it): allowed only on the caller, named as pid 0, the way `prlimit … --`,
 * `nice` and `ionice <command>` call them. setpriority and ioprio_set also need the one-process form:
 * with who 0 the group form names the caller's group and the user form every process of its user.
 * A thread naming itself by its id is refused too: a filter cannot compare with the caller's id.
 */
const OTHER_PROCESSES: ReadonlyArray<DenyRule> = [
  ...(["prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"] as const).map(
    (call): DenyRule => ({ call, errno: EPERM, unlessArgs: [{ arg: 0, is: 0 }] })
  ),
  {
    call: "setpriority",
    errno: EPERM,
    unlessArgs: [
      { arg: 0, is: PRIO_PROCESS },
      { arg: 1, is: 0 }
    ]
  },
  {
    call: "ioprio_set",
    errno: EPERM,
    unlessArgs: [
      { arg: 0, is: IOPRIO_WHO_PROCESS },
      { arg: 1, is: 0 }
    ]
  }
]

/**
 * What a job's `shell`/`git` process tree may not do under Landlock: open any socket (no network, no
 * path-named Unix socket such as a local database's; socketpair stays), io_uring (its operations pass
 * no filter), kernel keyrings, BPF, perf, userfaultfd, tracing other processes, new namespaces, mounts,
 * kernel modules, kexec, reboot, swap, process accounting; change another process's limits, priority,
 * scheduling or I/O class; truncate by path; leave the call's session or process group; memfd and SysV IPC.
 */
export const jobRules: ReadonlyArray<DenyRule> = [
  { call: "socket", errno: EACCES },
  ...(["io_uring_setup", "io_uring_enter", "io_uring_register"] as const).map((call): DenyRule => ({ call, errno: ENOSYS })),
  ...(
    [
      "keyctl",
      "add_key",
      "request_key",
      "bpf",
      "perf_event_open",
      "userfaultfd",
      "ptrace",
      "process_vm_readv",
      "process_vm_writev",
      "init_module",
      "finit_module",
      "delete_module",
      "kexec_load",
      "kexec_file_load",
      "reboot",
      "swapon",
      "swapoff",
      "acct"
    ] as const
  ).map((call): DenyRule => ({ call, errno: EPERM })),
  ...NAMESPACE_AND_MOUNT,
  ...OTHER_PROCESSES,
  // truncate(2) takes a path, which Landlock restricts only from ABI 3; ftruncate needs a file opened for writing, which it always restricts.
  { call: "truncate", errno: EPERM },
  // The runner kills a call by its session and process group: every process of the call stays in both.
  ...(["setsid", "setpgid"] as const).map((call): DenyRule => ({ call, errno: EPERM })),
  // memfd and SysV shared memory escape RLIMIT_DATA and the resident-memory limit; SysV objects outlive
  // the job (Landlock has no IPC namespace), and another process's are reachable by a guessable id.
  ...(
    [
      "memfd_create",
      "memfd_secret",
      "shmget",
      "shmat",
      "shmctl",
      "msgget",
      "msgsnd",
      "msgrcv",
      "msgctl",
      "semget",
      "semop",
      "semtimedop",
      "semctl"
    ] as const
  ).map((call): DenyRule => ({ call, errno: EPERM }))
]

/** Docker's default profile in the part that matters here: no new namespaces and no mounts (bubblewrap cannot start). */
export const containerRules: ReadonlyArray<DenyRule> = NAMESPACE_AND_MOUNT
