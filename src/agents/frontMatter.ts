/**
 * Front matter of package files: a strict `---` splitter and `Bun.YAML.parse`, capped in bytes, nodes
 * and depth. Nothing is ever evaluated: a language tag (`---js`, `--- yaml`) is refused, not honoured.
 */
import { Either } from "effect"
import type { Problem } from "../contract/Problem.ts"
import { displayName } from "../contract/packagePaths.ts"

/** UTF-8 bytes of the YAML between the two `---` lines. */
export const MAX_FRONT_MATTER_BYTES = 64 * 1024
/** Values after parsing (mappings, lists, scalars); an alias counts again at every use. */
export const MAX_FRONT_MATTER_NODES = 10_000
/** Nesting of mappings and lists. */
const MAX_FRONT_MATTER_DEPTH = 16

/** The YAML block and the body after the closing `---` line (its line break stripped). */
export interface SplitFrontMatter {
  readonly yaml: string
  readonly body: string
}

/** The parsed front matter: an own-property mapping, not yet validated, and the body. */
export interface FrontMatter {
  readonly raw: Readonly<Record<string, unknown>>
  readonly body: string
}

const isDelimiter = (line: string) => line === "---" || line === "---\r"

/**
 * Splits `text` at a first line that is exactly `---` (LF or CRLF) and the next such line. Any other
 * opening (a language tag, `----`, leading blanks, no front matter) is a message, never a guess.
 */
export const splitFrontMatter = (text: string): Either.Either<SplitFrontMatter, string> => {
  const firstEnd = text.indexOf("\n")
  const first = (firstEnd === -1 ? text : text.slice(0, firstEnd)).replace(/\r$/, "")
  if (first !== "---") {
    if (first.startsWith("---")) {
      return Either.left(
        `front matter must open with a line that is exactly "---"; "${displayName(first.slice(0, 40))}" is refused ` +
          "(language tags such as ---js are not supported: front matter is YAML only and is never evaluated)"
      )
    }
    return Either.left('must start with front matter: a "---" line, YAML, and a closing "---" line')
  }
  if (firstEnd === -1) return Either.left('front matter is not closed by a "---" line')
  let pos = firstEnd + 1
  for (;;) {
    // Characters never outnumber UTF-8 bytes, so this bounds the scan before the exact byte check.
    if (pos - firstEnd - 1 > MAX_FRONT_MATTER_BYTES) return Either.left(`front matter is larger than ${MAX_FRONT_MATTER_BYTES} bytes`)
    const end = text.indexOf("\n", pos)
    const line = end === -1 ? text.slice(pos) : text.slice(pos, end)
    if (isDelimiter(line)) {
      const yaml = text.slice(firstEnd + 1, pos)
      if (Buffer.byteLength(yaml, "utf8") > MAX_FRONT_MATTER_BYTES) {
        return Either.left(`front matter is larger than ${MAX_FRONT_MATTER_BYTES} bytes`)
      }
      return Either.right({ yaml, body: end === -1 ? "" : text.slice(end + 1) })
    }
    if (end === -1) return Either.left('front matter is not closed by a "---" line')
    pos = end + 1
  }
}

/**
 * Counts values breadth-first, counting on push so a list of a thousand aliases of a large list
 * stops after MAX_FRONT_MATTER_NODES pushes, not after building their expansion. Also ends cycles.
 */
const measure = (root: unknown): string | undefined => {
  const queue: Array<{ value: unknown; depth: number }> = [{ value: root, depth: 0 }]
  let nodes = 1
  for (let i = 0; i < queue.length; i++) {
    const item = queue[i]
    if (item === undefined) break
    const { value, depth } = item
    if (value === null || typeof value !== "object") continue
    if (depth >= MAX_FRONT_MATTER_DEPTH) return `front matter is nested deeper than ${MAX_FRONT_MATTER_DEPTH} levels`
    const children: ReadonlyArray<unknown> = Array.isArray(value) ? value : Object.values(value)
    for (const child of children) {
      if (++nodes > MAX_FRONT_MATTER_NODES) {
        return `front matter has more than ${MAX_FRONT_MATTER_NODES} values (aliases count at every use)`
      }
      queue.push({ value: child, depth: depth + 1 })
    }
  }
  return undefined
}

const kindOf = (v: unknown): string => (Array.isArray(v) ? "a list" : typeof v === "string" ? "a string" : `a ${typeof v}`)

/**
 * Splits and parses the front matter of `text` (a file called `file`, used as the problem path).
 * Empty front matter is an empty mapping. The result is Bun.YAML's plain object: `__proto__` is an
 * own key like any other, so callers must validate own properties only (an Effect Schema does).
 * Never throws; never evaluates anything.
 */
export const readFrontMatter = (text: string, file: string): Either.Either<FrontMatter, Array<Problem>> => {
  const split = splitFrontMatter(text)
  if (Either.isLeft(split)) return Either.left([{ path: file, message: split.left }])
  let parsed: unknown
  try {
    parsed = Bun.YAML.parse(split.right.yaml)
  } catch (e) {
    // Bun's own guard reports alias explosions ("Excessive aliasing") here.
    const detail = e instanceof Error ? e.message.replace(/^YAML Parse error:\s*/, "") : String(e)
    return Either.left([{ path: file, message: `front matter is not valid YAML: ${displayName(detail)}` }])
  }
  if (parsed === null || parsed === undefined) parsed = {}
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    return Either.left([{ path: file, message: `front matter must be a mapping of keys to values, not ${kindOf(parsed)}` }])
  }
  const tooBig = measure(parsed)
  if (tooBig !== undefined) return Either.left([{ path: file, message: tooBig }])
  return Either.right({ raw: parsed as Record<string, unknown>, body: split.right.body })
}

/**
 * Prefixes schema problems with the file: `(root)` → `file`, `tools.2` → `file#tools.2`. This `#`
 * form is the problem path format of every package check (docs/agent-packages.md).
 */
export const inFile = (file: string, problems: ReadonlyArray<Problem>): Array<Problem> =>
  problems.map((p) => ({ path: p.path === "(root)" ? file : `${file}#${p.path}`, message: p.message }))
