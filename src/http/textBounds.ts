/**
 * What the edge refuses in text before it reaches the database: bytes that are not UTF-8, JSON nested
 * deeper than a bound (found by a scan of the raw text, before `JSON.parse`), and characters PostgreSQL
 * `text`/`jsonb` cannot hold or that no caller means (NUL, other C0 controls, unpaired surrogates).
 */
import type { Problem } from "../contract/Problem.ts"

/** Deepest nesting of arrays and objects a JSON body may have. */
export const MAX_JSON_DEPTH = 64
/** At most this many character problems are listed (a hostile body could have millions). */
const MAX_PROBLEMS = 20

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** The bytes as text, or undefined when they are not valid UTF-8 (never repaired with U+FFFD). */
export const utf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * True when `text`, read as JSON, nests arrays/objects deeper than `max`. Iterative and linear, so a
 * body of 100,000 `[` costs one pass and no stack; brackets inside strings do not count.
 */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/** What is wrong with one string's characters, or undefined. Tab, newline and carriage return are text. */
export const characterProblem = (s: string): string | undefined => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) {
      return `contains the control character U+${c.toString(16).toUpperCase().padStart(4, "0")}, which cannot be stored`
    }
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
      else return "contains an unpaired surrogate (not Unicode text), which cannot be stored"
    } else if (c >= 0xdc00 && c <= 0xdfff) return "contains an unpaired surrogate (not Unicode text), which cannot be stored"
  }
  return undefined
}

const pathOf = (parent: string, key: string | number): string => (parent === "" ? String(key) : `${parent}.${key}`)

/**
 * Every string (value or key) of a parsed JSON value whose characters cannot be stored, each named by
 * its dotted path (`metadata.notes.2`; a bad key is named by its own path). Iterative: no recursion.
 */
export const jsonTextProblems = (value: unknown): Array<Problem> => {
  const problems: Array<Problem> = []
  const stack: Array<readonly [unknown, string]> = [[value, ""]]
  while (stack.length > 0 && problems.length < MAX_PROBLEMS) {
    const [v, path] = stack.pop()!
    if (typeof v === "string") {
      const p = characterProblem(v)
      if (p !== undefined) problems.push({ path: path === "" ? "(root)" : path, message: p })
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], pathOf(path, i)])
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i]!
        const p = characterProblem(k)
        if (p !== undefined) problems.push({ path: pathOf(path, JSON.stringify(k)), message: `the key ${p}` })
        stack.push([child, pathOf(path, k)])
      }
    }
  }
  return problems
}

/** Problems of named text fields (a form's fields, a URL's parameters): every field whose text cannot be stored. */
export const fieldTextProblems = (fields: Iterable<readonly [string, string]>): Array<Problem> => {
  const problems: Array<Problem> = []
  for (const [name, value] of fields) {
    const nameProblem = characterProblem(name)
    const p = nameProblem ?? characterProblem(value)
    if (p !== undefined) problems.push({ path: nameProblem === undefined ? name : JSON.stringify(name), message: p })
    if (problems.length >= MAX_PROBLEMS) break
  }
  return problems
}

/** A percent-encoded component (`+` as a space when `plusIsSpace`), or undefined when its bytes are not UTF-8. */
export const percentDecoded = (s: string, plusIsSpace: boolean): string | undefined => {
  try {
    return decodeURIComponent(plusIsSpace ? s.replaceAll("+", " ") : s)
  } catch {
    return undefined
  }
}

/**
 * `application/x-www-form-urlencoded` (or a query string) as name/value pairs, strictly: a component
 * that is not UTF-8 percent-encoding is a problem naming it, never a silent U+FFFD.
 */
export const urlEncodedPairs = (
  text: string,
  where: (name: string) => string = (n) => n
): { pairs: Array<[string, string]>; problems: Array<Problem> } => {
  const pairs: Array<[string, string]> = []
  const problems: Array<Problem> = []
  for (const part of text.split("&")) {
    if (part === "") continue
    const eq = part.indexOf("=")
    const rawName = eq < 0 ? part : part.slice(0, eq)
    const name = percentDecoded(rawName, true)
    const value = percentDecoded(eq < 0 ? "" : part.slice(eq + 1), true)
    if (name === undefined || value === undefined) {
      if (problems.length < MAX_PROBLEMS)
        problems.push({ path: where(name ?? rawName.slice(0, 64)), message: "is not valid UTF-8 percent-encoding" })
    } else pairs.push([name, value])
  }
  for (const p of fieldTextProblems(pairs)) problems.push({ ...p, path: where(p.path) })
  return { pairs, problems }
}
