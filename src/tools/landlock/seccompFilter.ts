/**
 * Seccomp BPF programs, built as bytes (struct sock_filter[]): a check of the architecture, then one
 * rule per denied system call (an errno, optionally only when a flag bit of its first argument is set).
 * The process runner's Landlock mechanism installs `jobFilter()`; tests that stand in for a default
 * container install `containerFilter()` (no new namespaces, no mounts), as Docker's profile does.
 */

export type SeccompArch = "x64" | "arm64"

/** One denied call: by name, the errno it returns, and (optionally) only when `flags & arg0` is non-zero. */
export interface DenyRule {
  readonly call: SyscallName
  readonly errno: number
  readonly whenArg0Has?: number
}

const SYSCALLS = {
  x64: {
    socket: 41, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, keyctl: 250, add_key: 248, request_key: 249,
    bpf: 321, perf_event_open: 298, userfaultfd: 323, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    unshare: 272, setns: 308, mount: 165, umount2: 166, pivot_root: 155, clone: 56, clone3: 435, open_tree: 428,
    move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442, init_module: 175,
    finit_module: 313, delete_module: 176, kexec_load: 246, kexec_file_load: 320, reboot: 169, swapon: 167, swapoff: 168, acct: 163
  },
  arm64: {
    socket: 198, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, keyctl: 219, add_key: 217, request_key: 218,
    bpf: 280, perf_event_open: 241, userfaultfd: 282, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
    unshare: 97, setns: 268, mount: 40, umount2: 39, pivot_root: 41, clone: 220, clone3: 435, open_tree: 428,
    move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, mount_setattr: 442, init_module: 105,
    finit_module: 273, delete_module: 106, kexec_load: 104, kexec_file_load: 294, reboot: 142, swapon: 224, swapoff: 225, acct: 89
  }
} as const satisfies Record<SeccompArch, Record<string, number>>

export type SyscallName = keyof (typeof SYSCALLS)["x64"]

const AUDIT_ARCH: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 }
/** x32 system calls on x86-64 carry this bit; a filter for x86-64 refuses them all. */
const X32_SYSCALL_BIT = 0x40000000

const EPERM = 1
const EACCES = 13
const ENOSYS = 38

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME. */
export const CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JSET_K = 0x45
const JGE_K = 0x35
const RET_K = 0x06
const RET_KILL_PROCESS = 0x80000000
const RET_ERRNO = 0x00050000
const RET_ALLOW = 0x7fff0000
// Offsets in struct seccomp_data: nr, arch, instruction_pointer, args[6] (the low word of args[0] on little-endian machines).
const OFF_NR = 0
const OFF_ARCH = 4
const OFF_ARG0_LOW = 16

type Insn = readonly [code: number, jt: number, jf: number, k: number]

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
  for (const rule of rules) {
    const nr = SYSCALLS[arch][rule.call]
    const deny: Insn = [RET_K, 0, 0, RET_ERRNO | (rule.errno & 0xffff)]
    if (rule.whenArg0Has === undefined) {
      prog.push([JEQ_K, 0, 1, nr], deny)
    } else {
      // nr matches: load arg0, deny when a flag is set, else reload nr and go on with the next rule.
      prog.push([JEQ_K, 0, 3, nr], [LD_W_ABS, 0, 0, OFF_ARG0_LOW], [JSET_K, 0, 1, rule.whenArg0Has], deny, [LD_W_ABS, 0, 0, OFF_NR])
    }
  }
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
  ...(["mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"] as const).map(
    (call): DenyRule => ({ call, errno: EPERM })
  )
]

/**
 * What a job's `shell`/`git` process tree may not do under Landlock: open any socket (no network, no
 * path-named Unix socket such as a local database's; socketpair stays), io_uring (its operations pass
 * no filter), kernel keyrings, BPF, perf, userfaultfd, tracing other processes, new namespaces, mounts,
 * kernel modules, kexec, reboot, swap, process accounting.
 */
export const jobRules: ReadonlyArray<DenyRule> = [
  { call: "socket", errno: EACCES },
  ...(["io_uring_setup", "io_uring_enter", "io_uring_register"] as const).map((call): DenyRule => ({ call, errno: ENOSYS })),
  ...([
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "ptrace", "process_vm_readv", "process_vm_writev",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct"
  ] as const).map(
    (call): DenyRule => ({ call, errno: EPERM })
  ),
  ...NAMESPACE_AND_MOUNT
]

/** Docker's default profile in the part that matters here: no new namespaces and no mounts (bubblewrap cannot start). */
export const containerRules: ReadonlyArray<DenyRule> = NAMESPACE_AND_MOUNT
