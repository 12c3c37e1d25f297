/**
 * Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0) so that a `bash -c` child running as the
 * same user cannot read our /proc/<pid>/environ or scan /proc/<pid>/mem for keys held only in memory
 * (security rule 7). Linux only; elsewhere it reports that it could not.
 */
import { dlopen, FFIType } from "bun:ffi"

const PR_GET_DUMPABLE = 3
const PR_SET_DUMPABLE = 4

const libc = () =>
  dlopen("libc.so.6", {
    prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 }
  })

/** Returns true when the process is now non-dumpable. */
export const makeNonDumpable = (): boolean => {
  if (process.platform !== "linux") return false
  try {
    const lib = libc()
    const ok = lib.symbols.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) === 0
    lib.close()
    return ok
  } catch {
    return false
  }
}

/** The current dumpable flag (1 = dumpable, 0 = not), or undefined off Linux. */
export const dumpableFlag = (): number | undefined => {
  if (process.platform !== "linux") return undefined
  const lib = libc()
  const flag = lib.symbols.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
  lib.close()
  return flag
}
