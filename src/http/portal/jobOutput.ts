/**
 * One output file of a job, for the job page's View and Download links. A job is hostile: only a path
 * the job reported in an `output` event is served. When the worker committed the outputs, the file is
 * read from that commit (commitOutputs.ts `readCommittedOutput`: what was committed, whatever the folder
 * holds later; a regular blob only); otherwise from inside its outDir as it is now (symlinks
 * resolved and kept inside, no `..`, then read as the output contract reads it: readOutputFile, a
 * regular file with one link — a hard link to a server file is refused — at most MAX_OUTPUT_BYTES,
 * opened again when the job replaced it mid-read). Never served as HTML: text inline as text/plain, anything
 * else as an attachment, always nosniff and with a sandboxing CSP, so no file can script the portal.
 */
import { Effect } from "effect"
import { realpath } from "node:fs/promises"
import { basename, isAbsolute, join } from "node:path"
import { readOutputFile } from "../../job/outputFile.ts"
import { readCommittedOutput } from "../../worker/commitOutputs.ts"
import type { ApiError } from "../respond.ts"
import { NotFound } from "../errors.ts"
import { utf8 } from "../textBounds.ts"

/** The largest output file served (a bigger one stays on disk, in outDir). */
const MAX_OUTPUT_BYTES = 10 * 1024 * 1024

const missing = (path: string): ApiError => new NotFound({ message: `no output file "${path}" of this job can be served` })

/** A path as `output` events name them: relative to outDir, no `..`, no NUL. */
const wellFormed = (p: string): boolean => p !== "" && !isAbsolute(p) && !p.includes("\0") && !p.split(/[\\/]/).includes("..")

/** Where a job's outputs are read from: its outDir, or the commit the worker made of them. */
export interface OutputSource {
  readonly outDir: string
  readonly committed?: { readonly commit: string; readonly jobId: string; readonly jobRoots: ReadonlyArray<string> }
}

/** The file's bytes, or 404 (the message never names a host path). */
export const readOutput = (source: OutputSource, path: string, reported: ReadonlyArray<string>): Effect.Effect<Uint8Array, ApiError> =>
  Effect.tryPromise({
    try: async () => {
      if (!wellFormed(path) || !reported.includes(path)) return undefined
      if (source.committed !== undefined)
        return readCommittedOutput({ ...source.committed, outDir: source.outDir, path, maxBytes: MAX_OUTPUT_BYTES })
      const root = await realpath(source.outDir)
      const read = await readOutputFile(join(root, path), root, MAX_OUTPUT_BYTES, "inside")
      return read.kind === "bytes" ? read.bytes : undefined
    },
    catch: () => missing(path)
  }).pipe(Effect.flatMap((bytes) => (bytes === undefined ? Effect.fail(missing(path)) : Effect.succeed(bytes))))

const OUTPUT_HEADERS = {
  "x-content-type-options": "nosniff",
  // Even if a browser rendered it, it would be an opaque origin with no script, style or request.
  "content-security-policy": "default-src 'none'; sandbox",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
} as const

/** RFC 6266 filename: ASCII fallback and the UTF-8 name. */
const disposition = (kind: "inline" | "attachment", path: string): string => {
  const name = basename(path)
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

/** View: UTF-8 text inline as text/plain; anything else (and every download) as an attachment. */
export const outputResponse = (path: string, bytes: Uint8Array, download: boolean): Response => {
  const text = download ? undefined : utf8(bytes)
  return new Response(bytes, {
    headers: {
      ...OUTPUT_HEADERS,
      "content-type": text === undefined ? "application/octet-stream" : "text/plain; charset=utf-8",
      "content-disposition": disposition(text === undefined ? "attachment" : "inline", path)
    }
  })
}
