/**
 * Makes this process receive SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG), so a job child
 * never outlives its serve process; its sandboxed processes die with it (bwrap --die-with-parent).
 */
import { dlopen, FFIType } from "bun:ffi"

const PR_SET_PDEATHSIG = 1
const SIGKILL = 9

const libc = () =>
  dlopen("libc.so.6", {
    prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
    getppid: { args: [], returns: FFIType.i32 }
  })

/**
 * Arms the parent-death signal. Returns false off Linux or when prctl fails. If the parent already
 * died before the signal was armed (we were reparented), this process exits at once.
 */
export const dieWithParent = (expectedParent: number = process.ppid): boolean => {
  if (process.platform !== "linux") return false
  try {
    const lib = libc()
    const ok = lib.symbols.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) === 0
    const parent = lib.symbols.getppid()
    lib.close()
    // The signal only fires for a death after prctl: a parent gone before it left us reparented.
    if (ok && parent !== expectedParent) process.exit(1)
    return ok
  } catch {
    return false
  }
}
