/** Process checks for tests, independent of the runner's own /proc code. */
import { readFileSync } from "node:fs"

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
