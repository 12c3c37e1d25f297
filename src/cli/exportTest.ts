/**
 * `kintsugi jobs export-test` against a running server: fetches GET /api/jobs/:id/export-test (a
 * completed job with a transcript as the files of a self-contained `bun test` folder) and writes them.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { dirname, isAbsolute, join, normalize } from "node:path"
import type { Remote } from "./runRemote.ts"

/** The answer of GET /api/jobs/:id/export-test, or its error. */
const Exported = Schema.Struct({
  jobId: Schema.String,
  files: Schema.Array(Schema.Struct({ path: Schema.String, content: Schema.String })),
  notes: Schema.Array(Schema.String)
})
const ErrorAnswer = Schema.Struct({ error: Schema.Struct({ message: Schema.String }) })

interface Io {
  readonly write: (s: string) => void
  readonly log: (line: string) => void
}

/** A path of the export that stays inside its folder once written (relative, no `..`). */
const safePath = (path: string) => {
  const n = normalize(path)
  return path !== "" && !isAbsolute(path) && n !== ".." && !n.startsWith("../") && !n.startsWith("/")
}

/**
 * Fetches the export of `jobId` and writes it under `out` (created; it must be empty or absent).
 * Returns the exit code: 0 written, 1 refused by the server, 2 when `out` holds files.
 */
export const exportTestRemote = async (
  remote: Remote & { readonly token: string },
  jobId: string,
  out: string,
  io: Io
): Promise<number> => {
  if (existsSync(out) && readdirSync(out).length > 0) {
    io.log(`kintsugi jobs export-test: ${out} holds files already; name an empty or new folder with --out`)
    return 2
  }
  const r = await fetch(`${remote.url}/api/jobs/${encodeURIComponent(jobId)}/export-test`, {
    headers: { authorization: `Bearer ${remote.token}` }
  })
  const body: unknown = await r.json().catch(() => undefined)
  const answer = Schema.decodeUnknownEither(Exported)(body)
  if (r.status !== 200 || Either.isLeft(answer)) {
    const error = Schema.decodeUnknownEither(ErrorAnswer)(body)
    const why =
      r.status === 401
        ? `the server refused the token (${remote.url}); issue a new one: kintsugi users token <you>`
        : Either.isRight(error)
          ? error.right.error.message
          : `HTTP ${r.status}`
    io.log(`kintsugi jobs export-test: ${why}`)
    return 1
  }
  const unsafe = answer.right.files.filter((f) => !safePath(f.path))
  if (unsafe.length > 0) {
    io.log(`kintsugi jobs export-test: the server sent paths outside the folder: ${unsafe.map((f) => f.path).join(", ")}`)
    return 1
  }
  for (const file of answer.right.files) {
    const path = join(out, file.path)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, file.content)
  }
  io.write(`wrote job ${answer.right.jobId} as a test: ${answer.right.files.length} files in ${out}\n`)
  for (const note of answer.right.notes) io.write(`  left out: ${note}\n`)
  io.write(`run it: cd ${out} && bun install && bun test (package.json names kintsugi-runtime at the server's version)\n`)
  return 0
}
