/**
 * Whether a test may mount a small tmpfs (to fill a disk on purpose): undefined when it may, else why
 * not (not root, or mounting refused here), for the test's skip reason.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export const tmpfsUnavailable = (): string | undefined => {
  if (process.getuid?.() !== 0) return "not root: cannot mount a tmpfs"
  const probe = mkdtempSync(join(tmpdir(), "kintsugi-tmpfs-probe-"))
  try {
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe]).exitCode === 0
    if (!mounted) return "mount -t tmpfs is refused here"
    Bun.spawnSync(["umount", probe])
    return undefined
  } finally {
    rmSync(probe, { recursive: true, force: true })
  }
}

/** A fresh tmpfs of `sizeMb` mounted on a new temporary directory (prefix `prefix`), unmounted and removed by `cleanups`. */
export const mountTmpfs = (prefix: string, sizeMb: number, cleanups: Array<() => unknown>): string => {
  const mount = mkdtempSync(join(tmpdir(), prefix))
  cleanups.push(() => rmSync(mount, { recursive: true, force: true }))
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", mount])
  if (mounted.exitCode !== 0) throw new Error(`mount -t tmpfs on ${mount} failed: ${mounted.stderr.toString()}`)
  cleanups.push(() => void Bun.spawnSync(["umount", "-l", mount]))
  return mount
}
