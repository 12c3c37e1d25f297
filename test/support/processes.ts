/** Process checks for tests, independent of the runner's own /proc code. */
import { readdirSync, readFileSync } from "node:fs"

/** True while `pid` runs; a zombie (dead, not yet reaped) or a missing entry counts as dead. */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

/** Live pids (in this PID namespace) whose argv holds `arg` exactly: finds sandboxed processes too. */
export const pidsWithArg = (arg: string): Array<number> =>
  readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").includes(arg) && isAlive(pid)
      } catch {
        return false
      }
    })
