/**
 * The one path-confinement module (security rules 1-5): validates path inputs, resolves them inside
 * the job's canonical workspace, opens exactly what it checked, and writes by temp file + rename. Its
 * synchronous descriptor checks live in confinementSync.ts (Effect-free, so grep's workers load them).
 */
import fs from "node:fs"
import path from "node:path"
import { Effect, Schema } from "effect"
import type { Problem } from "../contract/Problem.ts"
import { ToolError } from "./ToolError.ts"
import { MAX_PATH_INPUT_BYTES } from "./toolLimits.ts"
import { C, closeQuietly, fdInside, fdPath, isInside, readFd } from "./confinementSync.ts"

export { isInside } from "./confinementSync.ts"
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** The canonical workspace of one job: every path is absolute and canonical (realpath), resolved once at job start. */
export interface ResolvedWorkspace {
  readonly root: string
  /** Directories or files; the first entry is the default search directory. */
  readonly readOnly: ReadonlyArray<string>
  readonly outDir: string
  /**
   * The job's skill resource files (canonical host directory, one folder per skill), also a read-only
   * entry; the model names it SKILLS_MOUNT, and paths inside it are shown that way.
   */
  readonly skills?: string
}

/** Where a job sees the resource files of its shared skills: `/skills/<skill>/<path>` (read-only). */
export const SKILLS_MOUNT = "/skills"

/** Extra problems of one canonical workspace path (`field` names the spec field), e.g. the job boundary (workspaceBoundary.ts). */
export type PathCheck = (field: string, canonical: string) => ReadonlyArray<Problem>

/** The workspace fields of a job spec, as given (not yet canonical). */
export interface WorkspaceSpec {
  readonly root: string
  readonly readOnly: ReadonlyArray<string>
  readonly outDir: string
}

/** A workspace that cannot be used; lists every problem at once, `path` naming the spec field. */
export class WorkspaceInvalid extends Schema.TaggedError<WorkspaceInvalid>()("WorkspaceInvalid", {
  problems: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {}

/** A readable path after confinement. */
export interface ReadTarget {
  /** Canonical absolute path. */
  readonly path: string
  /** The read-only entry that contains it; descriptors are re-verified against it. */
  readonly root: string
  /** Relative to workspace.root with forward slashes, for messages and events. */
  readonly display: string
}

/** A writable file path after confinement: `base` exists and is canonical, `missing` are created by `atomicWrite`. */
export interface WriteTarget {
  readonly outDir: string
  readonly base: string
  readonly missing: ReadonlyArray<string>
  readonly name: string
  /** Canonical absolute path the file will have. */
  readonly path: string
  /** Relative to workspace.outDir with forward slashes. */
  readonly display: string
}

const toolError = (message: string) => new ToolError({ message })
const codeOf = (e: unknown): string => (e as NodeJS.ErrnoException | undefined)?.code ?? "EUNKNOWN"

/** `p` relative to `base` with forward slashes ("." for `base` itself). */
const displayPath = (base: string, p: string): string => path.relative(base, p).split(path.sep).join("/") || "."

/** A canonical readable path as tools show it: under SKILLS_MOUNT for skill files, else relative to the root. */
export const displayOf = (ws: ResolvedWorkspace, p: string): string =>
  ws.skills !== undefined && isInside(p, ws.skills) ? SKILLS_MOUNT + p.slice(ws.skills.length) : displayPath(ws.root, p)

/** A read input naming SKILLS_MOUNT, as the host path it stands for (checked like any other afterwards). */
const skillsAlias = (ws: ResolvedWorkspace, input: string): string | undefined =>
  ws.skills !== undefined && (input === SKILLS_MOUNT || input.startsWith(`${SKILLS_MOUNT}/`))
    ? ws.skills + input.slice(SKILLS_MOUNT.length)
    : undefined

/** Rejects (never repairs) inputs that are empty, over MAX_PATH_INPUT_BYTES, or hold NUL/control characters. */
export const validateInput = (input: string, what: string): Effect.Effect<string, ToolError> =>
  input.length === 0
    ? Effect.fail(toolError(`${what} is empty`))
    : Buffer.byteLength(input, "utf8") > MAX_PATH_INPUT_BYTES
      ? Effect.fail(toolError(`${what} is longer than ${MAX_PATH_INPUT_BYTES} bytes`))
      : CONTROL.test(input)
        ? Effect.fail(toolError(`${what} contains a NUL or control character`))
        : Effect.succeed(input)

const realpath = (p: string) => Effect.tryPromise({ try: () => fs.promises.realpath(p), catch: codeOf })

const realpathNow = (p: string) => Effect.try({ try: () => fs.realpathSync(p), catch: codeOf })

/** Canonical form of the deepest existing ancestor of `raw`, with the components below it (in order). */
const deepestExisting = (raw: string) =>
  Effect.gen(function* () {
    const parts = raw.split("/").filter((s) => s.length > 0)
    const missing: Array<string> = []
    let firstError: string | undefined
    for (;;) {
      const r = yield* Effect.either(realpath("/" + parts.join("/")))
      if (r._tag === "Right") return { base: r.right, missing, firstError }
      firstError ??= r.left
      const last = parts.pop()
      if (last === undefined) return { base: "/", missing, firstError }
      missing.unshift(last)
    }
  })

const canonicalDir = (p: string, field: string, kinds: "dir" | "dir-or-file") =>
  Effect.gen(function* () {
    if (!path.isAbsolute(p)) return yield* Effect.fail({ path: field, message: "must be an absolute path" })
    // Synchronous: a job's start resolves a few workspace paths, each a round trip to the thread pool otherwise.
    const real = yield* Effect.mapError(realpathNow(p), (code) => ({
      path: field,
      message: code === "ENOENT" ? "does not exist" : `cannot be resolved (${code})`
    }))
    const st = yield* Effect.try({ try: () => fs.statSync(real), catch: () => ({ path: field, message: "cannot be read" }) })
    if (!st.isDirectory() && !(kinds === "dir-or-file" && st.isFile())) {
      return yield* Effect.fail({ path: field, message: kinds === "dir" ? "is not a directory" : "is not a file or directory" })
    }
    return real
  })

/**
 * Canonicalizes the workspace once, at job start (fs.promises.realpath). Refuses missing or wrong-kind
 * entries, a job whose outDir and read-only entries overlap, and whatever `check` says of each
 * canonical path, listing every problem.
 */
export const resolveWorkspace = (ws: WorkspaceSpec, check?: PathCheck): Effect.Effect<ResolvedWorkspace, WorkspaceInvalid> =>
  Effect.gen(function* () {
    const problems: Array<{ path: string; message: string }> = []
    const take = <A>(e: Effect.Effect<A, { path: string; message: string }>) =>
      Effect.match(e, {
        onFailure: (p): A | undefined => {
          problems.push(p)
          return undefined
        },
        onSuccess: (a): A | undefined => a
      })
    const checked = (field: string, real: string | undefined) => {
      if (real !== undefined && check !== undefined) problems.push(...check(field, real))
      return real
    }
    const root = checked("workspace.root", yield* take(canonicalDir(ws.root, "workspace.root", "dir")))
    const outDir = checked("workspace.outDir", yield* take(canonicalDir(ws.outDir, "workspace.outDir", "dir")))
    if (ws.readOnly.length === 0) problems.push({ path: "workspace.readOnly", message: "needs at least one directory" })
    const readOnly: Array<string> = []
    for (const [i, entry] of ws.readOnly.entries()) {
      const field = `workspace.readOnly.${i}`
      const abs = path.isAbsolute(entry) || root === undefined ? entry : path.join(root, entry)
      const real = checked(field, yield* take(canonicalDir(abs, field, i === 0 ? "dir" : "dir-or-file")))
      if (real === undefined) continue
      if (outDir !== undefined && (isInside(real, outDir) || isInside(outDir, real))) {
        problems.push({ path: field, message: "overlaps workspace.outDir" })
      }
      readOnly.push(real)
    }
    if (problems.length > 0 || root === undefined || outDir === undefined) {
      return yield* Effect.fail(new WorkspaceInvalid({ problems }))
    }
    return { root, readOnly, outDir }
  })

const resolveError = (code: string, input: string) =>
  toolError(
    code === "ENOENT"
      ? `file not found: ${input}`
      : code === "ENOTDIR"
        ? `a component of the path is not a directory: ${input}`
        : code === "ELOOP"
          ? `too many levels of symbolic links: ${input}`
          : code === "EACCES"
            ? `permission denied: ${input}`
            : `cannot resolve path: ${input}`
  )

const readEntryOf = (ws: ResolvedWorkspace, canonical: string) =>
  // A canonical path strictly below a file entry cannot exist, so the prefix rule gives a file entry exact-equality semantics.
  ws.readOnly.find((entry) => isInside(canonical, entry))

/**
 * Resolves a read input: relative to workspace.root, symlinks followed the way the kernel follows
 * them (fs.promises.realpath, never lexical `..` collapsing); the result must lie inside a read-only
 * entry. A missing path inside is "not found"; anything outside gets the same message whether it exists or not.
 */
export const resolveReadPath = (ws: ResolvedWorkspace, input: string): Effect.Effect<ReadTarget, ToolError> =>
  Effect.gen(function* () {
    yield* validateInput(input, "path")
    const raw = skillsAlias(ws, input) ?? (path.isAbsolute(input) ? input : `${ws.root}/${input}`)
    const outside = toolError(`path is outside the readable workspace: ${input}`)
    const resolved = yield* Effect.either(realpath(raw))
    if (resolved._tag === "Left") {
      const { base } = yield* deepestExisting(raw)
      return yield* Effect.fail(readEntryOf(ws, base) === undefined ? outside : resolveError(resolved.left, input))
    }
    const root = readEntryOf(ws, resolved.right)
    if (root === undefined) return yield* Effect.fail(outside)
    return { path: resolved.right, root, display: displayOf(ws, resolved.right) }
  })

/**
 * Resolves a write input: relative to workspace.outDir; the deepest existing ancestor is canonicalized
 * and the rest appended only if no component is "." or ".."; the file itself is never followed (a leaf
 * symlink is replaced, not written through). Refuses read-only entries, anything outside outDir and `.git`.
 */
export const resolveWritePath = (ws: ResolvedWorkspace, input: string): Effect.Effect<WriteTarget, ToolError> =>
  Effect.gen(function* () {
    yield* validateInput(input, "path")
    const raw = path.isAbsolute(input) ? input : `${ws.outDir}/${input}`
    const parts = raw.split("/").filter((s) => s.length > 0)
    const name = parts.pop()
    if (name === undefined || name === "." || name === ".." || raw.endsWith("/")) {
      return yield* Effect.fail(toolError(`path must name a file: ${input}`))
    }
    const { base, missing, firstError } = yield* deepestExisting("/" + parts.join("/"))
    const final = [base === "/" ? "" : base, ...missing, name].join("/")
    if (ws.readOnly.some((entry) => isInside(base, entry) || isInside(final, entry))) {
      return yield* Effect.fail(toolError(`path is in the read-only workspace; write only under the output directory: ${input}`))
    }
    if (!isInside(base, ws.outDir)) {
      return yield* Effect.fail(toolError(`path is outside the output directory: ${input}`))
    }
    if (missing.some((c) => c === "." || c === "..")) {
      return yield* Effect.fail(toolError(`path has "." or ".." below a directory that does not exist: ${input}`))
    }
    if (firstError !== undefined && firstError !== "ENOENT") return yield* Effect.fail(resolveError(firstError, input))
    const display = displayPath(ws.outDir, final)
    // `.git` anywhere (case-folded for case-insensitive checkouts): hooks and config there run code.
    if (display.split("/").some((c) => c.toLowerCase() === ".git")) {
      return yield* Effect.fail(toolError(`writing inside .git is not allowed: ${input}`))
    }
    return { outDir: ws.outDir, base, missing, name, path: final, display }
  })

/**
 * Opens a confined path without following a final symlink and without blocking (O_NOFOLLOW |
 * O_NONBLOCK), checks its type with fstat and, on Linux, that the descriptor still lies inside
 * `target.root`; `use` reads from that descriptor, which is closed afterwards, also on interruption.
 */
const openChecked = <A, E>(
  target: { readonly path: string; readonly root: string; readonly display: string },
  kind: "file" | "directory",
  use: (fd: number, stat: fs.Stats) => Effect.Effect<A, E>
): Effect.Effect<A, E | ToolError> =>
  Effect.acquireUseRelease(
    Effect.try({
      try: () => fs.openSync(target.path, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | (kind === "directory" ? C.O_DIRECTORY : 0)),
      catch: (e) =>
        codeOf(e) === "ELOOP"
          ? toolError(`path changed while it was opened: ${target.display}`)
          : codeOf(e) === "ENOTDIR"
            ? toolError(`not a directory: ${target.display}`)
            : resolveError(codeOf(e), target.display)
    }),
    (fd) =>
      Effect.flatMap(
        Effect.try({
          try: () => ({ stat: fs.fstatSync(fd), inside: fdInside(fd, target.root) }),
          catch: () => toolError(`cannot read ${target.display}`)
        }),
        ({ stat, inside }): Effect.Effect<A, E | ToolError> =>
          kind === "file" && stat.isDirectory()
            ? Effect.fail(toolError(`${target.display} is a directory; use ls`))
            : kind === "file" && !stat.isFile()
              ? Effect.fail(toolError(`not a regular file: ${target.display}`))
              : !inside
                ? Effect.fail(toolError(`path is outside the workspace: ${target.display}`))
                : use(fd, stat)
      ),
    (fd) => Effect.sync(() => closeQuietly(fd))
  )

/** Reads a whole regular file through `openChecked`; refuses files over `maxBytes`. */
export const readFileChecked = (target: ReadTarget, maxBytes: number): Effect.Effect<Buffer, ToolError> =>
  openChecked(target, "file", (fd, stat) => {
    if (stat.size > maxBytes) {
      return Effect.fail(
        toolError(`file is too large (${Math.ceil(stat.size / 1048576)} MB, limit ${maxBytes / 1048576} MB): ${target.display}`)
      )
    }
    return Effect.sync(() => readFd(fd, stat.size, Buffer.allocUnsafe(stat.size)))
  })

/** Lists one directory through `openChecked` (read from the descriptor itself on Linux). */
export const readDirChecked = (target: ReadTarget): Effect.Effect<ReadonlyArray<fs.Dirent>, ToolError> =>
  openChecked(target, "directory", (fd) =>
    Effect.try({
      try: () => fs.readdirSync(fdPath(fd, target.path), { withFileTypes: true }),
      catch: () => toolError(`cannot list ${target.display}`)
    })
  )

/** Opens a directory with O_NOFOLLOW and checks the descriptor is exactly `expected`, inside `root`. */
const openDirVerified = (p: string, expected: string, root: string): number => {
  const fd = fs.openSync(p, C.O_RDONLY | C.O_NOFOLLOW | C.O_DIRECTORY)
  if (!fdInside(fd, root, expected)) {
    closeQuietly(fd)
    throw new Error("EESCAPE")
  }
  return fd
}

/**
 * Writes `data` to `target` as temp file + rename in a verified parent: never in place, so a hard
 * link or leaf symlink at the target is replaced, not written through. Missing parents are created one
 * level at a time, each re-verified through its descriptor before anything is created inside it.
 */
export const atomicWrite = (target: WriteTarget, data: string | Uint8Array): Effect.Effect<void, ToolError> =>
  Effect.try({
    try: () => {
      let dir = target.base
      let dfd = openDirVerified(dir, dir, target.outDir)
      try {
        for (const component of target.missing) {
          const next = `${dir === "/" ? "" : dir}/${component}`
          try {
            fs.mkdirSync(`${fdPath(dfd, dir)}/${component}`, { mode: 0o755 })
          } catch (e) {
            if (codeOf(e) !== "EEXIST") throw e
          }
          const child = openDirVerified(`${fdPath(dfd, dir)}/${component}`, next, target.outDir)
          closeQuietly(dfd)
          dfd = child
          dir = next
        }
        const parent = fdPath(dfd, dir)
        const temp = `${parent}/.kintsugi-${crypto.randomUUID()}.tmp`
        const mode = existingMode(`${parent}/${target.name}`)
        const fd = fs.openSync(temp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, mode)
        try {
          fs.writeFileSync(fd, data)
        } finally {
          closeQuietly(fd)
        }
        try {
          fs.renameSync(temp, `${parent}/${target.name}`)
        } catch (e) {
          fs.rmSync(temp, { force: true })
          throw e
        }
      } finally {
        closeQuietly(dfd)
      }
    },
    catch: (e) =>
      toolError(
        codeOf(e) === "EISDIR" || codeOf(e) === "ENOTEMPTY"
          ? `${target.display} is a directory`
          : codeOf(e) === "ENOTDIR" || codeOf(e) === "EEXIST"
            ? `a parent of ${target.display} is not a directory`
            : codeOf(e) === "ENOSPC"
              ? `no space left to write ${target.display}`
              : `cannot write ${target.display}: the path changed or is not writable`
      )
  })

/** Permission bits of an existing regular file at `p` (not followed), so an overwrite keeps them. */
const existingMode = (p: string): number => {
  try {
    const st = fs.lstatSync(p)
    return st.isFile() ? st.mode & 0o777 : 0o644
  } catch {
    return 0o644
  }
}
