/**
 * Line matchers for grep: literal search with String.includes, regular expressions with re2js
 * (linear time: a pattern from the model cannot stall the process on attacker-written files), plus
 * whole-file rejections that let grep skip most files without decoding them.
 */
import { Effect } from "effect"
import { RE2JS } from "re2js"
import { ToolError } from "./Tool.ts"

export interface LineMatcher {
  /** Fast whole-file rejection on raw bytes: false = no line of this file can match. */
  readonly mayMatchBytes: (bytes: Buffer) => boolean
  /** Whole-file rejection on decoded text (a superset of the per-line test). */
  readonly mayMatchText: (text: string) => boolean
  readonly test: (line: string) => boolean
  /** UTF-16 index of the first match in `line`, or -1. */
  readonly indexIn: (line: string) => number
}

/**
 * Literals (at least 2 characters, longest first) that every match of an RE2 `pattern` must contain, for
 * a byte prefilter; empty when unsure (top-level alternation, inline flags, escapes it does not model).
 * Only ever under-claims.
 */
export const requiredLiterals = (pattern: string): Array<string> => {
  if (pattern.includes("(?") || pattern.includes("\\Q")) return []
  const chars = Array.from(pattern)
  const runs: Array<string> = []
  let run: Array<string> = []
  const flush = () => {
    if (run.length >= 2) runs.push(run.join(""))
    run = []
  }
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] ?? ""
    if (ch === "\\") {
      const next = chars[++i]
      if (next === undefined) return []
      if (/[sSwWdDbBAz]/.test(next)) flush()
      else if (/[A-Za-z0-9]/.test(next)) return []
      else run.push(next)
    } else if (ch === "[" || ch === "(") {
      const end = skipBracket(chars, i)
      if (end === undefined) return []
      i = end
      flush()
    } else if (ch === ")" || ch === "|") {
      return []
    } else if (ch === "." || ch === "^" || ch === "$") {
      flush()
    } else if (ch === "*" || ch === "?") {
      run.pop()
      flush()
    } else if (ch === "+") {
      flush()
    } else if (ch === "{" && /^\{\d+(,\d*)?\}/.test(chars.slice(i, i + 24).join(""))) {
      const rep = /^\{(\d+)(,\d*)?\}/.exec(chars.slice(i, i + 24).join(""))?.[0] ?? "{"
      if (/^\{0[,}]/.test(rep)) run.pop()
      flush()
      i += rep.length - 1
    } else {
      run.push(ch)
    }
  }
  flush()
  return runs.sort((a, b) => b.length - a.length)
}

/** Index of the `]` or `)` closing the class or group opened at `start`, or undefined. */
const skipBracket = (chars: ReadonlyArray<string>, start: number): number | undefined => {
  let depth = 0
  for (let i = start; i < chars.length; i++) {
    const ch = chars[i]
    if (ch === "\\") i++
    else if (ch === "[") {
      // A class: "]" right after "[" or "[^" is a literal member; "[:alpha:]" nests.
      let j = i + 1
      if (chars[j] === "^") j++
      if (chars[j] === "]") j++
      for (; j < chars.length && chars[j] !== "]"; j++) {
        if (chars[j] === "\\") j++
        else if (chars[j] === "[" && chars[j + 1] === ":") {
          const close = chars.indexOf("]", j + 2)
          if (close === -1) return undefined
          j = close
        }
      }
      if (j >= chars.length) return undefined
      i = j
      if (depth === 0) return i
    } else if (ch === "(") depth++
    else if (ch === ")") {
      depth--
      if (depth === 0) return i
    }
  }
  return undefined
}

/** Compiles the model's pattern; a syntax error comes back as a ToolError naming RE2 syntax. */
export const compileMatcher = (
  pattern: string,
  opts: { readonly literal: boolean; readonly ignoreCase: boolean }
): Effect.Effect<LineMatcher, ToolError> => {
  if (opts.literal && !opts.ignoreCase) {
    const needle = Buffer.from(pattern, "utf8")
    return Effect.succeed({
      mayMatchBytes: (bytes) => bytes.indexOf(needle) !== -1,
      mayMatchText: () => true,
      test: (line) => line.includes(pattern),
      indexIn: (line) => line.indexOf(pattern)
    })
  }
  const source = opts.literal ? RE2JS.quote(pattern) : pattern
  const flags = RE2JS.MULTILINE | (opts.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0)
  return Effect.try({
    try: () => RE2JS.compile(source, flags),
    catch: (e) =>
      new ToolError({
        message: `invalid regular expression (RE2 syntax: no lookaround or backreferences): ${e instanceof Error ? e.message : String(e)}`
      })
  }).pipe(
    Effect.map((re): LineMatcher => {
      const literals = opts.literal ? [pattern] : requiredLiterals(pattern)
      const literal = literals[0]
      const bytesFilter =
        literal === undefined ? undefined
        : opts.ignoreCase ? caseInsensitiveFilter(literal)
        : exactBytesFilter(literals.map((l) => Buffer.from(l, "utf8")))
      // Whole-file tests are a superset of line tests only while ^ and $ stay line anchors (no inline
      // flags, no \A or \z) and no "\r" sits before a line end ($ does not match before "\r\n").
      const wholeFileOk = !source.includes("(?") && !/\\[Az]/.test(source)
      const exactLiteral = opts.ignoreCase ? undefined : literal
      return {
        mayMatchBytes: (bytes) =>
          bytesFilter !== undefined ? bytesFilter(bytes) : !wholeFileOk || bytes.indexOf(13) !== -1 || re.test(bytes),
        mayMatchText: (text) => !wholeFileOk || text.includes("\r") || re.test(text),
        test: (line) => (exactLiteral !== undefined && !line.includes(exactLiteral) ? false : re.test(line)),
        indexIn: (line) => {
          const m = re.matcher(line)
          return m.find() ? m.start() : -1
        }
      }
    })
  )
}

const exactBytesFilter = (needles: ReadonlyArray<Buffer>) => (bytes: Buffer) => needles.every((n) => bytes.indexOf(n) !== -1)

/**
 * A byte prefilter for a case-insensitive ASCII literal: first a memmem scan for each case variant of
 * its 4-character window with the fewest letters, then the whole literal in an ASCII-folded copy.
 * Non-ASCII text folds onto ASCII letters only through U+212A KELVIN SIGN (k) and U+017F LONG S (s), so a
 * file holding either passes. Undefined for a non-ASCII literal.
 */
const caseInsensitiveFilter = (literal: string): ((bytes: Buffer) => boolean) | undefined => {
  if (!/^[\x20-\x7e]+$/.test(literal)) return undefined
  const size = Math.min(4, literal.length)
  let best = literal.slice(0, size)
  let bestLetters = Number.POSITIVE_INFINITY
  for (let i = 0; i + size <= literal.length; i++) {
    const w = literal.slice(i, i + size)
    const letters = w.replace(/[^A-Za-z]/g, "").length
    if (letters < bestLetters) [best, bestLetters] = [w, letters]
  }
  let variants = [""]
  for (const ch of best) {
    const lo = ch.toLowerCase()
    const up = ch.toUpperCase()
    variants = lo === up ? variants.map((v) => v + ch) : variants.flatMap((v) => [v + lo, v + up])
  }
  const anchors = variants.map((v) => Buffer.from(v, "latin1"))
  const special = /[ks]/i.test(literal) ? [Buffer.from("\u212a", "utf8"), Buffer.from("\u017f", "utf8")] : []
  const folded = Buffer.from(literal.toLowerCase(), "latin1")
  let scratch = Buffer.allocUnsafe(64 * 1024)
  return (bytes) => {
    if (special.some((n) => bytes.indexOf(n) !== -1)) return true
    if (!anchors.some((a) => bytes.indexOf(a) !== -1)) return false
    if (scratch.length < bytes.length) scratch = Buffer.allocUnsafe(Math.max(bytes.length, scratch.length * 2))
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i] ?? 0
      scratch[i] = c >= 65 && c <= 90 ? c | 32 : c
    }
    return scratch.subarray(0, bytes.length).indexOf(folded) !== -1
  }
}
