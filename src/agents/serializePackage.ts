/**
 * Writes a package back to its files (export, the editor's source view). The front matter is emitted
 * by hand in one fixed key order and quoting, so parse(serialize(p)) deep-equals p.
 */
import type { AgentPackage } from "./packageSchema.ts"

const PLAIN = /^[a-z][a-z0-9_-]*$/
/** Plain scalars YAML (1.1 or 1.2) would read as something other than the string. */
const RESERVED = new Set(["true", "false", "null", "yes", "no", "on", "off", "y", "n"])

/**
 * A YAML scalar for a string: plain when it is a simple lower-case word, else double-quoted. JSON
 * escapes are YAML escapes; characters YAML treats as breaks or forbids raw are escaped too.
 */
export const yamlString = (s: string): string =>
  PLAIN.test(s) && !RESERVED.has(s)
    ? s
    : JSON.stringify(s).replace(
        /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
      )

/** Any metadata value: a string as yamlString, anything else as JSON (YAML's flow style reads it back equal). */
export const yamlValue = (v: unknown): string => (typeof v === "string" ? yamlString(v) : JSON.stringify(v ?? null))

const yamlScalar = (v: string | number): string => (typeof v === "number" ? String(v) : yamlString(v))

const yamlItems = <T>(key: string, items: ReadonlyArray<T> | undefined, item: (t: T) => string): Array<string> =>
  items === undefined ? [] : items.length === 0 ? [`${key}: []`] : [`${key}:`, ...items.map((i) => `  - ${item(i)}`)]

const yamlList = (key: string, items: ReadonlyArray<string> | undefined): Array<string> => yamlItems(key, items, yamlString)

/** An `outputs:` entry: a file name, or a file with its schema as a flow mapping (`{ file: "a.json", schema: "schemas/a.json" }`). */
const outputYaml = (o: NonNullable<AgentPackage["outputs"]>[number]): string =>
  typeof o === "string" ? yamlString(o) : `{ file: ${yamlString(o.file)}, schema: ${yamlString(o.schema)} }`

/** The `<name>.md` front matter block (without the `---` lines), keys in the documented order. */
const frontMatterYaml = (pkg: AgentPackage): string =>
  [
    `name: ${yamlString(pkg.name)}`,
    `version: ${yamlScalar(pkg.version)}`,
    `description: ${yamlString(pkg.description)}`,
    ...yamlList("tools", pkg.tools),
    ...yamlList("skills", pkg.skills),
    ...(pkg.thinking !== undefined ? [`thinking: ${yamlString(pkg.thinking)}`] : []),
    ...yamlList("deny-command-patterns", pkg.denyCommandPatterns),
    ...(pkg.grounding !== undefined ? [`grounding: ${pkg.grounding}`] : []),
    ...yamlItems("outputs", pkg.outputs, outputYaml),
    ...(pkg.answer !== undefined ? [`answer: { schema: ${yamlString(pkg.answer.schema)} }`] : []),
    ...(pkg.gate !== undefined ? [`gate: ${pkg.gate}`] : []),
    "metadata:",
    `  audience: ${pkg.audience}`,
    ...(pkg.memoryRole !== undefined ? [`  memory-role: ${pkg.memoryRole}`] : []),
    ...Object.keys(pkg.metadata ?? {})
      .sort()
      .map((k) => `  ${yamlString(k)}: ${yamlValue(pkg.metadata?.[k])}`)
  ]
    .map((line) => `${line}\n`)
    .join("")

/**
 * The package as files: `<name>.md`, then `skills/<n>/SKILL.md` per local skill, then the package
 * files, each verbatim. Pure; paths are those of the package (already checked by the parser).
 */
export const serializeAgentPackage = (pkg: AgentPackage): Array<{ path: string; content: string }> => [
  { path: `${pkg.name}.md`, content: `---\n${frontMatterYaml(pkg)}---\n${pkg.instructions}` },
  ...pkg.localSkills.map((s) => ({ path: `skills/${s.name}/SKILL.md`, content: s.content })),
  ...pkg.files.map((f) => ({ path: f.path, content: f.content })),
  ...(pkg.evals ?? []).map((f) => ({ path: f.path, content: f.content }))
]
