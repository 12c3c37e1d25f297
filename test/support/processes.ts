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

/** The pids of every process below `root` (from /proc's parent links). */
export const descendants = (root: number): Array<number> => {
  const parent = new Map<number, number>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1")
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const walk = (pid: number) => {
    for (const [child, p] of parent) if (p === pid) found.push(child), walk(child)
  }
  walk(root)
  return found
}
