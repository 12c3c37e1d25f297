/**
 * The job boundary check (ARCHITECTURE §10), pure over canonical paths: one place used by the server
 * before a job is queued and by the job child before it starts. Never names a host path in a message.
 */
import { Effect } from "effect"
import fs from "node:fs"
import path from "node:path"
import type { JobBoundary } from "../contract/AgentRuntime.ts"
import type { Problem } from "../contract/Problem.ts"
import { isInside, type PathCheck } from "../job/confinement.ts"

export type { PathCheck }

/** A forbidden path and how messages call it (never the path itself). */
interface ForbiddenPath {
  readonly path: string
  readonly name: string
}

/** A boundary whose paths are canonical (symlinks resolved). */
export interface CanonicalBoundary {
  readonly jobRoots: ReadonlyArray<string>
  readonly forbidden: ReadonlyArray<ForbiddenPath>
}

const GENERIC_NAME = "a path reserved for the server"

/**
 * Canonical form of an absolute path that may not exist yet: the deepest existing ancestor through
 * fs.realpathSync (never lexical `..` collapsing), then the missing components appended as they
 * are; undefined when one of those is "." or "..".
 */
export const canonicalPath = (p: string): Effect.Effect<string | undefined> =>
  // Synchronous (the job start's boundary checks): no round trip to the thread pool per path.
  Effect.sync(() => {
    const parts = path
      .resolve(p)
      .split("/")
      .filter((s) => s.length > 0)
    const missing: Array<string> = []
    for (;;) {
      try {
        const base = fs.realpathSync("/" + parts.join("/"))
        if (missing.some((c) => c === "." || c === "..")) return undefined
        return path.join(base, ...missing)
      } catch {
        const last = parts.pop()
        if (last === undefined) return undefined
        missing.unshift(last)
      }
    }
  })

/** Canonicalizes a boundary (the envelope's, or the configured one); `names` labels forbidden paths by their given form. */
export const canonicalBoundary = (b: JobBoundary, names: Readonly<Record<string, string>> = {}): Effect.Effect<CanonicalBoundary> =>
  Effect.gen(function* () {
    const jobRoots: Array<string> = []
    for (const r of b.jobRoots) {
      const c = yield* canonicalPath(r)
      if (c !== undefined) jobRoots.push(c)
    }
    const forbidden: Array<ForbiddenPath> = []
    for (const f of b.forbidden) {
      // A forbidden path that cannot be canonicalized is kept as given: refusing too much is safe.
      forbidden.push({ path: (yield* canonicalPath(f)) ?? path.resolve(f), name: names[f] ?? GENERIC_NAME })
    }
    return { jobRoots, forbidden }
  })

/** The job root holding canonical `p`, if any. */
const jobRootOf = (b: CanonicalBoundary, p: string): string | undefined => b.jobRoots.find((r) => isInside(p, r))

/**
 * Problems of one canonical workspace path: outside every job root; containing (equal to or above) a
 * forbidden path; inside a forbidden path, unless the job root holding it lies strictly inside that
 * forbidden path (the default `<data dir>/workspaces` root is such a carve-out of the data dir).
 */
export const boundaryProblems = (b: CanonicalBoundary, field: string, p: string): Array<Problem> => {
  const problems: Array<Problem> = []
  const root = jobRootOf(b, p)
  if (root === undefined) problems.push({ path: field, message: "resolves outside the job roots (symbolic links followed)" })
  for (const f of b.forbidden) {
    if (isInside(f.path, p)) problems.push({ path: field, message: `is or contains ${f.name}` })
    else if (isInside(p, f.path) && !(root !== undefined && root !== f.path && isInside(root, f.path))) {
      problems.push({ path: field, message: `is inside ${f.name}` })
    }
  }
  return problems
}

/** The check `resolveWorkspace` applies to each canonical path, for a boundary. */
export const boundaryCheck =
  (b: CanonicalBoundary): PathCheck =>
  (field, p) =>
    boundaryProblems(b, field, p)
