/**
 * Bytes a directory tree takes on disk (allocated blocks, each hard-linked file once), walked without
 * following symbolic links; the process runner's disk limits read it while a job's processes run.
 */
import { lstat, readdir, realpath } from "node:fs/promises"
import { join } from "node:path"

/** Allocated bytes under `dir` (0 when it is gone); entries that vanish mid-walk are skipped. */
export const diskUsage = async (dir: string): Promise<number> => {
  const seen = new Set<string>()
  let total = 0
  let root: string
  try {
    root = await realpath(dir)
  } catch {
    return 0
  }
  const stack = [root]
  while (stack.length > 0) {
    const d = stack.pop() as string
    let names: Array<string>
    try {
      names = await readdir(d)
      // A directory swapped for a symbolic link after its lstat was read: what readdir listed is elsewhere.
      if ((await realpath(d)) !== d) continue
    } catch {
      continue
    }
    for (const name of names) {
      const p = join(d, name)
      try {
        const st = await lstat(p)
        if (st.nlink > 1 && !st.isDirectory()) {
          const key = `${st.dev}:${st.ino}`
          if (seen.has(key)) continue
          seen.add(key)
        }
        total += st.blocks * 512
        if (st.isDirectory()) stack.push(p)
      } catch {
        // Removed while walking: it takes nothing now.
      }
    }
  }
  return total
}
