/**
 * The resource files of a job's shared skills (the envelope's `skillFiles`), written once at job start
 * into a fresh private directory the job sees read-only at SKILLS_MOUNT (`/skills/<skill>/<path>`), and
 * removed when the job ends. Names are checked again here: the envelope is input like any other.
 */
import { Effect, Either } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { duplicateNames, pathProblems } from "../contract/packagePaths.ts"
import { JobRefused, type SkillFile } from "../contract/AgentRuntime.ts"
import type { Problem } from "../contract/Problem.ts"

/** The written directory (canonical) and, per skill, its file paths in order (for the prompt). */
export interface SkillFilesDir {
  readonly dir: string
  readonly listing: ReadonlyMap<string, ReadonlyArray<string>>
}

/** Every problem of the files' names: bad paths, and two files of one skill with the same path. */
const skillFileProblems = (files: ReadonlyArray<SkillFile>): Array<Problem> => [
  ...files.flatMap((f, i) => pathProblems(f.path).map((message) => ({ path: `skillFiles.${i}.path`, message }))),
  ...duplicateNames(files.map((f) => `${f.skill}/${f.path}`)).map(({ index }) => ({
    path: `skillFiles.${index}.path`,
    message: `duplicate file of skill "${files[index]?.skill ?? ""}"`
  }))
]

/** Sets every directory below `dir` (and `dir`) to `mode`, deepest last. */
const chmodDirs = (dir: string, mode: number): void => {
  fs.chmodSync(dir, mode)
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) chmodDirs(path.join(dir, e.name), mode)
}

const write = (files: ReadonlyArray<SkillFile>): SkillFilesDir => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-skills-")))
  const listing = new Map<string, Array<string>>()
  try {
    for (const f of files) {
      const target = path.join(dir, f.skill, ...f.path.split("/"))
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 })
      // `wx`: a fresh file in a directory only this process wrote; nothing is followed or overwritten.
      fs.writeFileSync(target, Buffer.from(f.contentBase64, "base64"), { flag: "wx", mode: 0o444 })
      listing.set(f.skill, [...(listing.get(f.skill) ?? []), f.path])
    }
    chmodDirs(dir, 0o555)
  } catch (e) {
    removeSkillFiles(dir)
    throw e
  }
  return { dir, listing }
}

/** Removes the directory (made writable again first); never fails. */
const removeSkillFiles = (dir: string): void => {
  try {
    chmodDirs(dir, 0o700)
  } catch {
    // Gone or half-written: rm below does what it can.
  }
  fs.rmSync(dir, { recursive: true, force: true })
}

/**
 * The files written (undefined when there are none), removed when the caller's scope closes; a name
 * that is not a plain relative path refuses the job (JobRefused), before anything is written.
 */
export const materializeSkillFiles = (files: ReadonlyArray<SkillFile> | undefined) =>
  Effect.gen(function* () {
    if (files === undefined || files.length === 0) return undefined
    const problems = skillFileProblems(files)
    if (problems.length > 0) return yield* Effect.fail(new JobRefused({ problems }))
    const written = yield* Effect.acquireRelease(Effect.either(Effect.try(() => write(files))), (r) =>
      Effect.sync(() => Either.isRight(r) && removeSkillFiles(r.right.dir))
    )
    if (Either.isLeft(written))
      return yield* Effect.fail(
        new JobRefused({ problems: [{ path: "skillFiles", message: "the skill resource files could not be written" }] })
      )
    return written.right
  })
