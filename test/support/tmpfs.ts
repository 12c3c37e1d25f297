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
