/**
 * `bun confineExec.ts <spec> --` (the command, its working directory and environment are in the spec):
 * confines itself, then becomes the command. The runner starts it from the installation's directory
 * with no env file and the installation's tsconfig, so nothing of the job's workspace configures the
 * Bun that runs it. In order:
 * parent-death signal, every capability dropped (also for root), no_new_privs, a Landlock ruleset that grants only the spec's
 * paths (every right the kernel can restrict is handled, TCP denied, signals and abstract sockets
 * scoped), a seccomp filter (no sockets, no namespaces, no mounts, no tracing), resource limits, then execve. Any
 * failure before execve ends the process with code 126 and one line on stderr: nothing runs unconfined.
 */
import { closeSync, fstatSync, openSync, statSync, writeSync } from "node:fs"
import {
  decodeSpec,
  DEVICE_RIGHTS,
  FILE_RIGHTS,
  handledFs,
  handledNet,
  READ_RIGHTS,
  scopes,
  type ConfineSpec,
  WRITE_RIGHTS
} from "./landlockRules.ts"
import {
  addPathRule,
  createRuleset,
  dropCapabilities,
  prepareExecve,
  installSeccomp,
  landlockAbi,
  restrictSelf,
  RLIMIT,
  setNoNewPrivs,
  setParentDeathSignal,
  setRlimit
} from "./linuxCalls.ts"
import { buildFilter, currentArch, jobRules } from "./seccompFilter.ts"

/** Linux O_PATH: names a file or directory for a Landlock rule without opening it for I/O. */
const O_PATH = 0o10000000
const SIGKILL = 9
export const CONFINE_FAILED = 126

/** Applies `spec` to this process; throws naming the step that failed. */
export const confineSelf = (spec: ConfineSpec): void => {
  const abi = landlockAbi()
  if (abi < 1) throw new Error("Landlock is not available in this kernel")
  const arch = currentArch()
  if (arch === undefined) throw new Error(`no seccomp filter for ${process.arch}`)
  setParentDeathSignal(SIGKILL)
  dropCapabilities()
  setNoNewPrivs()
  const handled = handledFs(abi)
  const ruleset = createRuleset(abi, handled, handledNet(abi), scopes(abi))
  const grant = (path: string, rights: bigint) => {
    let fd: number
    try {
      fd = openSync(path, O_PATH)
    } catch {
      return // Not on this system (e.g. /lib32): nothing to grant.
    }
    try {
      const dir = statSync(path).isDirectory()
      addPathRule(ruleset, (dir ? rights : rights & FILE_RIGHTS) & handled, fd)
    } finally {
      closeSync(fd)
    }
  }
  const grantFd = (fd: number, rights: bigint) => {
    addPathRule(ruleset, (fstatSync(fd).isDirectory() ? rights : rights & FILE_RIGHTS) & handled, fd)
  }
  for (const p of spec.readOnly) grant(p, READ_RIGHTS)
  for (const p of spec.writable) grant(p, WRITE_RIGHTS)
  for (const p of spec.devices) grant(p, DEVICE_RIGHTS)
  for (const fd of spec.readOnlyFds ?? []) grantFd(fd, READ_RIGHTS)
  for (const fd of spec.writableFds ?? []) grantFd(fd, WRITE_RIGHTS)
  restrictSelf(ruleset)
  closeSync(ruleset)
  // The handles are not the command's: it gets stdin, stdout and stderr only.
  for (const fd of [...(spec.readOnlyFds ?? []), ...(spec.writableFds ?? [])]) closeSync(fd)
  installSeccomp(buildFilter(arch, jobRules))
}

/** The spec's resource limits on this process; set last, since this process itself may need more memory before execve. */
export const limitSelf = (spec: ConfineSpec): void => {
  if (spec.rlimits === undefined) return
  const { dataBytes, fileBytes, cpuSec } = spec.rlimits
  setRlimit(RLIMIT.fsize, BigInt(fileBytes), BigInt(fileBytes))
  setRlimit(RLIMIT.cpu, BigInt(cpuSec), BigInt(cpuSec + 1))
  setRlimit(RLIMIT.data, BigInt(dataBytes), BigInt(dataBytes))
}

if (import.meta.main) {
  // --probe: write the Landlock ABI on stdout before becoming the command (the sandbox probe).
  const probe = process.argv[2] === "--probe"
  const at = probe ? 3 : 2
  const spec = decodeSpec(process.argv[at])
  if (spec === undefined || process.argv[at + 1] !== "--" || process.argv.length !== at + 2) {
    process.stderr.write("sandbox: usage: confineExec.ts [--probe] <spec> --\n")
    process.exit(CONFINE_FAILED)
  }
  try {
    const exec = prepareExecve(spec.argv, spec.env ?? {})
    confineSelf(spec)
    if (spec.cwd !== undefined) process.chdir(spec.cwd)
    if (probe) writeSync(1, `${landlockAbi()}\n`)
    limitSelf(spec)
    exec()
  } catch (e) {
    process.stderr.write(`sandbox: ${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(CONFINE_FAILED)
  }
}
