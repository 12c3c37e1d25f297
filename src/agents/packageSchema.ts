/**
 * Schemas of an agent package: the `<name>.md` front matter as written, a local skill's optional
 * front matter, and the parsed `AgentPackage` (also the shape the editor sends as JSON).
 */
import { Schema } from "effect"
import { ThinkingLevel } from "../contract/AgentDefinition.ts"

export const AGENT_NAME = /^[a-z][a-z0-9-]*$/
export const MAX_AGENT_NAME_LENGTH = 64
/** Also the cap for local skill names. */
export const MAX_SKILL_NAME_LENGTH = 64
export const MAX_DESCRIPTION_LENGTH = 2000
const MAX_LIST_ITEMS = 64
export const MAX_ITEM_LENGTH = 200

export const AUDIENCES = ["runtime", "member"] as const
export const Audience = Schema.Literal(...AUDIENCES).annotations({
  message: () => ({ message: `must be one of ${AUDIENCES.join(", ")}`, override: true })
})
export type Audience = typeof Audience.Type

export const AgentName = Schema.String.pipe(
  Schema.filter((s) =>
    AGENT_NAME.test(s) && s.length <= MAX_AGENT_NAME_LENGTH
      ? undefined
      : `must match [a-z][a-z0-9-]* and be at most ${MAX_AGENT_NAME_LENGTH} characters`
  )
)

/** The author's label, kept as YAML typed it: `version: 3` is a number, `version: "1.10"` a string. */
const AgentVersion = Schema.Union(
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_ITEM_LENGTH)),
  Schema.Number.pipe(Schema.finite())
).annotations({
  message: () => ({ message: `must be a number or a non-empty string of at most ${MAX_ITEM_LENGTH} characters`, override: true })
})

const Description = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(MAX_DESCRIPTION_LENGTH, { message: () => `must be at most ${MAX_DESCRIPTION_LENGTH} characters` })
)

const Item = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(MAX_ITEM_LENGTH, { message: () => `must be at most ${MAX_ITEM_LENGTH} characters` })
)
const List = Schema.Array(Item).pipe(Schema.maxItems(MAX_LIST_ITEMS, { message: () => `at most ${MAX_LIST_ITEMS} entries` }))
/** Deny patterns: sizes and counts are checked by compileDenyPatterns, with its messages. */
const Patterns = Schema.Array(Schema.String)

/** One `outputs:` entry: a file name, or `{ file, schema }` naming a JSON Schema in the package's schemas/. */
const OutputEntry = Schema.Union(Item, Schema.Struct({ file: Item, schema: Item })).annotations({
  message: () => ({ message: "must be a file name, or { file: <name>.json, schema: schemas/<name>.json }", override: true })
})
export type OutputEntry = typeof OutputEntry.Type
const Outputs = Schema.Array(OutputEntry).pipe(Schema.maxItems(MAX_LIST_ITEMS, { message: () => `at most ${MAX_LIST_ITEMS} entries` }))

/** `answer: { schema: schemas/<name>.json }`: the JSON Schema the job's final message must satisfy. */
const Answer = Schema.Struct({ schema: Item }).annotations({
  message: () => ({ message: "must be { schema: schemas/<name>.json }", override: true })
})

const Grounding = Schema.Literal("required").annotations({ message: () => ({ message: "must be required (or left out)", override: true }) })

/** `gate: evals`: a new version becomes current only when its evals pass (docs/evals.md). */
const Gate = Schema.Literal("evals").annotations({ message: () => ({ message: "must be evals (or left out)", override: true }) })

const optional = <A, I>(s: Schema.Schema<A, I>) => Schema.optionalWith(s, { exact: true })

const MemoryRole = Schema.Literal("reviewer").annotations({ message: () => ({ message: "must be reviewer", override: true }) })

/** `<name>.md` front matter, as written (own properties only; unknown keys are problems). */
export const AgentFrontMatter = Schema.Struct({
  name: AgentName,
  version: AgentVersion,
  description: Description,
  tools: optional(List),
  skills: optional(List),
  thinking: optional(ThinkingLevel),
  "deny-command-patterns": optional(Patterns),
  /** `required`: ungrounded citations fail the job (docs/grounding.md). */
  grounding: optional(Grounding),
  /** The output contract: files the job must write, each optionally with a JSON Schema (docs/grounding.md "Output contracts"). */
  outputs: optional(Outputs),
  /** The typed answer: the final message is JSON valid against this package schema (docs/agent-packages.md). */
  answer: optional(Answer),
  gate: optional(Gate),
  /** `audience`, `memory-role`, and any other keys kept as written (foreign keys of imported files land here). */
  metadata: optional(
    Schema.Struct(
      {
        audience: optional(Audience),
        /** `reviewer`: an independent memory reviewer (sees only reviewed notes and its own run's). */
        "memory-role": optional(MemoryRole)
      },
      Schema.Record({ key: Schema.String, value: Schema.Unknown })
    )
  )
})
export type AgentFrontMatter = typeof AgentFrontMatter.Type

/** Optional front matter of `skills/<n>/SKILL.md`; `name`, when given, must equal `<n>`. */
export const SkillFrontMatter = Schema.Struct({
  name: optional(Schema.String),
  description: optional(Description)
})

const LocalSkill = Schema.Struct({ name: Schema.String, content: Schema.String })
type LocalSkill = typeof LocalSkill.Type

/** A package file other than `<name>.md` and `skills/<n>/SKILL.md`: commands, workflows, scripts, schemas. */
export const PackageFile = Schema.Struct({ path: Schema.String, content: Schema.String })
export type PackageFile = typeof PackageFile.Type

/**
 * A parsed agent package. `tools`, `skills` and `denyCommandPatterns` keep the difference between
 * absent and `[]` (absent tools = every kernel tool; `[]` = none). `localSkills` are sorted by name
 * and `files` by path, so equal packages are deep-equal.
 */
export const AgentPackage = Schema.Struct({
  name: AgentName,
  version: AgentVersion,
  description: Description,
  tools: optional(Schema.Array(Schema.String)),
  /** Shared skill names, in the order listed. */
  skills: optional(Schema.Array(Schema.String)),
  thinking: optional(ThinkingLevel),
  denyCommandPatterns: optional(Schema.Array(Schema.String)),
  grounding: optional(Grounding),
  outputs: optional(Schema.Array(Schema.Union(Schema.String, Schema.Struct({ file: Schema.String, schema: Schema.String })))),
  /** The schema (a schemas/<name>.json of `files`) the job's final message must satisfy as JSON. */
  answer: optional(Schema.Struct({ schema: Schema.String })),
  /** `evals`: saving a new version runs its evals and makes it current only when all pass. */
  gate: optional(Gate),
  audience: Audience,
  /** Project memory role from `metadata.memory-role` (absent = an ordinary agent). */
  memoryRole: optional(MemoryRole),
  /** Front-matter `metadata` other than `audience`, kept as written (e.g. an imported file's `model`, `color`). */
  metadata: optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** The body of `<name>.md`, verbatim. */
  instructions: Schema.String,
  localSkills: Schema.Array(LocalSkill),
  files: Schema.Array(PackageFile),
  /** Everything under `evals/` (eval files and fixtures), by path; absent when there is none (docs/evals.md). */
  evals: optional(Schema.Array(PackageFile))
})
export type AgentPackage = typeof AgentPackage.Type
