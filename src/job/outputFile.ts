/**
 * The one reader of a job's output file, for the output contract, grounding, evals and the portal's
 * output view: opened without following a link, judged by the opened descriptor (a regular file with
 * one link inside the root, at most `maxBytes`), and opened again when it was replaced mid-read.
 */
import { constants } from "node:fs"
import { isInside } from "./confinement.ts"
import { fdInside } from "./confinementSync.ts"

type OutputRead = { readonly kind: "missing" | "not-regular" | "too-large" } | { readonly kind: "bytes"; readonly bytes: Uint8Array }

/**
 * Tries at a file that was replaced while it was read (a job writing it again: temp file and rename
 * leave the opened inode with no link, and a path resolved meanwhile can come back as missing): what
 * counts is what the path holds now, so it is tried again, this many times at most.
 */
const REPLACED_RETRIES = 5

/**
 * The file at `path`. `links`: `refuse` (a link there is `not-regular`), or `inside` (links resolved,
 * and the target must lie inside `root`). Read only when what was opened lies inside `root`.
 */
export const readOutputFile = async (
  path: string,
  root: string,
  maxBytes: number,
  links: "refuse" | "inside" = "refuse"
): Promise<OutputRead> => {
  // Node's fs/promises is loaded here, when an output is read, not with the kernel (milliseconds of the
  // cold job child's way to job.started).
  const { open, realpath } = await import("node:fs/promises")
  for (let retries = 0; ; retries++) {
    const again = retries < REPLACED_RETRIES
    const target = links === "refuse" ? path : await realpath(path).catch((e: NodeJS.ErrnoException) => e)
    if (target instanceof Error) {
      if (target.code === "ENOENT" && again) continue
      return { kind: target.code === "ENOENT" ? "missing" : "not-regular" }
    }
    if (links === "inside" && (target === root || !isInside(target, root))) return { kind: "not-regular" }
    const fh = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((e: NodeJS.ErrnoException) => e)
    if (fh instanceof Error) {
      if (fh.code === "ENOENT" && links === "inside" && again) continue
      return { kind: fh.code === "ENOENT" ? "missing" : "not-regular" }
    }
    try {
      const st = await fh.stat()
      if (st.nlink === 0 && again) continue
      if (!st.isFile() || st.nlink !== 1) return { kind: "not-regular" }
      // What was opened, not the path checked before: a directory swapped for a link since is not followed out.
      if (!fdInside(fh.fd, root)) return { kind: "not-regular" }
      if (st.size > maxBytes) return { kind: "too-large" }
      const bytes = new Uint8Array(st.size)
      const { bytesRead } = await fh.read(bytes, 0, st.size, 0)
      return { kind: "bytes", bytes: bytes.subarray(0, bytesRead) }
    } finally {
      await fh.close()
    }
  }
}
