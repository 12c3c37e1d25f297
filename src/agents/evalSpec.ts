/**
 * Evaluations of an agent package (docs/evals.md): `evals/<name>.md` (front matter: description, the
 * fixture folder, the expectations; body: the task) and the fixture folders `evals/fixtures/<folder>/**`.
 * They are part of the package and of its immutable version, and never reach a job's prompt.
 */
import { Either, Schema } from "effect"
import { decodeAll, type Problem } from "../contract/Problem.ts"
import { inFile, readFrontMatter } from "./frontMatter.ts"
import { displayName } from "../contract/packagePaths.ts"

const EVALS_DIR = "evals"
const EVAL_NAME = /^[a-z][a-z0-9-]*$/
const MAX_EVAL_NAME_LENGTH = 64
const MAX_TEXT = 2000

type EvalPathRole =
  | { readonly role: "eval"; readonly name: string }
  | { readonly role: "fixture"; readonly folder: string; readonly path: string }
  | { readonly role: "other"; readonly message: string }

const LAYOUT = "evals/ holds <name>.md files and fixture folders evals/fixtures/<folder>/…"

/** The role of a path under `evals/` (already passed `pathProblems`); undefined for any other path. */
const evalPathRole = (path: string): EvalPathRole | undefined => {
  const parts = path.split("/")
  if (parts[0] !== EVALS_DIR || parts.length < 2) return undefined
  const [, second, folder] = parts
  if (parts.length === 2 && second !== undefined && second.endsWith(".md")) {
    const name = second.slice(0, -3)
    return EVAL_NAME.test(name) && name.length <= MAX_EVAL_NAME_LENGTH
      ? { role: "eval", name }
      : {
          role: "other",
          message: `eval name "${displayName(name)}" must match [a-z][a-z0-9-]* and be at most ${MAX_EVAL_NAME_LENGTH} characters`
        }
  }
  if (second === "fixtures" && folder !== undefined && parts.length >= 4) return { role: "fixture", folder, path: parts.slice(3).join("/") }
  return { role: "other", message: `not an eval file (${LAYOUT})` }
}

const optional = <A, I>(s: Schema.Schema<A, I>) => Schema.optionalWith(s, { exact: true })
const Text = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(MAX_TEXT, { message: () => `must be at most ${MAX_TEXT} characters` })
)
/** An output file name, relative to the output directory (the package path rules apply). */
const OutputName = Text.pipe(
  Schema.filter((s) =>
    s.startsWith("/") || s.split("/").some((seg) => seg === ".." || seg === "." || seg === "") || s.includes("\\")
      ? "must be a relative path inside the output directory"
      : undefined
  )
)
const Needle = Schema.Struct({ file: optional(OutputName), text: Text })
export type Needle = typeof Needle.Type
const Count = Schema.Number.pipe(
  Schema.int({ message: () => "must be a whole number" }),
  Schema.positive({ message: () => "must be positive" })
)

export const EvalExpect = Schema.Struct({
  files: optional(Schema.Array(OutputName).pipe(Schema.maxItems(64, { message: () => "at most 64 entries" }))),
  schema: optional(Schema.Boolean),
  grounding: optional(Schema.Literal("clean").annotations({ message: () => ({ message: "must be clean (or left out)", override: true }) })),
  contains: optional(Schema.Array(Needle).pipe(Schema.maxItems(64, { message: () => "at most 64 entries" }))),
  "not-contains": optional(Schema.Array(Needle).pipe(Schema.maxItems(64, { message: () => "at most 64 entries" }))),
  "max-cost-usd": optional(
    Schema.Number.pipe(Schema.finite(), Schema.positive({ message: () => "must be a positive number of US dollars" }))
  ),
  "max-turns": optional(Count)
})
export type EvalExpect = typeof EvalExpect.Type

const EvalFrontMatter = Schema.Struct({
  description: Text,
  fixture: Schema.String.pipe(Schema.minLength(1, { message: () => "must name a folder under evals/fixtures/" })),
  expect: EvalExpect
})

/** One parsed evaluation: `task` is the body of its file. */
export interface EvalSpec {
  readonly name: string
  readonly description: string
  readonly fixture: string
  readonly expect: EvalExpect
  readonly task: string
}

/** A fixture folder's files, paths relative to the folder. */
export interface Fixture {
  readonly folder: string
  readonly files: ReadonlyArray<{ readonly path: string; readonly content: string }>
}

export interface ParsedEvals {
  readonly evals: ReadonlyArray<EvalSpec>
  readonly fixtures: ReadonlyMap<string, Fixture>
  readonly problems: ReadonlyArray<Problem>
}

/**
 * Every eval of a package's `evals/` files, or every problem at once (paths `evals/x.md#expect.contains.0.file`).
 * Files whose path is not an eval file are reported too, so the result stands alone.
 */
export const parseEvals = (files: ReadonlyArray<{ readonly path: string; readonly content: string }>): ParsedEvals => {
  const problems: Array<Problem> = []
  const evals: Array<EvalSpec> = []
  const fixtures = new Map<string, { folder: string; files: Array<{ path: string; content: string }> }>()
  const evalFiles: Array<{ name: string; path: string; content: string }> = []
  for (const f of files) {
    const role = evalPathRole(f.path)
    if (role === undefined || role.role === "other")
      problems.push({ path: displayName(f.path), message: role?.message ?? `not an eval file (${LAYOUT})` })
    else if (role.role === "eval") evalFiles.push({ name: role.name, path: f.path, content: f.content })
    else {
      const fixture = fixtures.get(role.folder) ?? { folder: role.folder, files: [] }
      fixture.files.push({ path: role.path, content: f.content })
      fixtures.set(role.folder, fixture)
    }
  }
  for (const f of evalFiles) {
    const fm = readFrontMatter(f.content, f.path)
    if (Either.isLeft(fm)) {
      problems.push(...fm.left)
      continue
    }
    const decoded = decodeAll(EvalFrontMatter)(fm.right.raw)
    const local: Array<Problem> = Either.isLeft(decoded) ? inFile(f.path, decoded.left) : []
    const fixture = fm.right.raw["fixture"]
    if (typeof fixture === "string" && fixture !== "" && !fixtures.has(fixture)) {
      local.push({ path: `${f.path}#fixture`, message: `no folder evals/fixtures/${displayName(fixture)}/ with files in the package` })
    }
    if (Either.isRight(decoded) && Object.keys(decoded.right.expect).length === 0) {
      local.push({
        path: `${f.path}#expect`,
        message: "needs at least one check (files, schema, grounding, contains, not-contains, max-cost-usd, max-turns)"
      })
    }
    if (fm.right.body.trim() === "")
      local.push({ path: `${f.path}#body`, message: "the task (the text after the front matter) must not be empty" })
    problems.push(...local)
    if (local.length === 0 && Either.isRight(decoded)) {
      evals.push({
        name: f.name,
        description: decoded.right.description,
        fixture: decoded.right.fixture,
        expect: decoded.right.expect,
        task: fm.right.body
      })
    }
  }
  if (evalFiles.length === 0 && fixtures.size > 0)
    problems.push({ path: EVALS_DIR, message: "fixture folders without any evals/<name>.md" })
  evals.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { evals, fixtures, problems }
}
