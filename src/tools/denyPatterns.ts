/**
 * `denyCommandPatterns`: admin regexes checked against the exact command string of a process tool
 * call, with re2js (linear time, no backtracking). A tripwire, not a boundary: a model can spell a
 * command many ways (quoting, `$'\x74ouch'`, `base64 -d | bash`); see docs/process-tools.md.
 */
import { Either } from "effect"
import type { RE2JS } from "re2js"

export const MAX_DENY_PATTERNS = 64
/** Per pattern, UTF-8 bytes. */
const MAX_DENY_PATTERN_BYTES = 1024
/**
 * re2js program size (≈ NFA instructions) per pattern and for all patterns together. Matching costs
 * about input length × program size in the worst case (no DFA), so these bound the stall per call.
 */
const MAX_DENY_PROGRAM_SIZE = 400
const MAX_DENY_TOTAL_PROGRAM_SIZE = 1600
/** Longer commands are blocked outright when patterns are configured (fail closed). */
export const MAX_DENY_INPUT_BYTES = 64 * 1024

export interface DenyPatternProblem {
  /** Position of the pattern in the list. */
  readonly index: number
  readonly message: string
}

type DenyVerdict = { readonly blocked: false } | { readonly blocked: true; readonly reason: string }

/** Never throws; an engine error or an oversize command blocks. */
export type DenyMatcher = (command: string) => DenyVerdict

const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8")

let engine: typeof import("re2js") | undefined
/**
 * re2js, loaded at the first pattern compiled: a job without denyCommandPatterns never evaluates it
 * (its module builds its tables as it loads, milliseconds of the cold job child's way to job.started).
 * Synchronous, as the decoders that call compileDenyPatterns are.
 */
const re2js = (): typeof import("re2js") => (engine ??= require("re2js") as typeof import("re2js"))

/**
 * Finds constructs re2 lacks but admins may expect (backreferences, lookaround), so the message says
 * what is unsupported instead of re2js's generic "invalid escape". Walks escapes and character classes
 * so `\\1` (a literal backslash, then 1) and `[(?=]` are not flagged.
 */
const unsupportedConstruct = (p: string): string | undefined => {
  let inClass = false
  for (let i = 0; i < p.length; i++) {
    const c = p[i]
    if (c === "\\") {
      const next = p[i + 1] ?? ""
      if (!inClass && (/[1-9]/.test(next) || next === "k" || next === "g")) return "backreferences are not supported"
      i++
      continue
    }
    if (inClass) {
      if (c === "]") inClass = false
      continue
    }
    if (c === "[") {
      inClass = true
      // `[]…]` and `[^]…]`: a leading ] is a literal member, not the end of the class.
      if (p[i + 1] === "^") i++
      if (p[i + 1] === "]") i++
      continue
    }
    if (c === "(" && p[i + 1] === "?") {
      const rest = p.slice(i + 2, i + 5)
      if (rest.startsWith("=") || rest.startsWith("!") || rest.startsWith("<=") || rest.startsWith("<!")) {
        return "lookahead and lookbehind are not supported"
      }
      if (rest.startsWith("P=") || rest.startsWith("P>")) return "backreferences are not supported"
    }
  }
  return undefined
}

const compileOne = (p: string): Either.Either<RE2JS, string> => {
  if (p.length === 0) return Either.left("an empty pattern would block every command")
  if (utf8Length(p) > MAX_DENY_PATTERN_BYTES) return Either.left(`longer than ${MAX_DENY_PATTERN_BYTES} bytes`)
  const unsupported = unsupportedConstruct(p)
  if (unsupported !== undefined) return Either.left(unsupported)
  let re: RE2JS
  try {
    re = re2js().RE2JS.compile(p)
  } catch (e) {
    return Either.left(`invalid regular expression: ${e instanceof Error ? e.message : String(e)}`)
  }
  const size = re.programSize()
  if (size > MAX_DENY_PROGRAM_SIZE) {
    return Either.left(`too complex (program size ${size}, at most ${MAX_DENY_PROGRAM_SIZE}); shorten repetitions`)
  }
  return Either.right(re)
}

/** Checks one pattern when it is saved: a message for the admin, or undefined when it is valid. */
export const validateDenyPattern = (pattern: string): string | undefined =>
  Either.match(compileOne(pattern), { onLeft: (m) => m, onRight: () => undefined })

/**
 * Compiles a pattern list into a matcher, or returns every problem at once. Patterns are RE2 syntax,
 * unanchored, case-sensitive unless they say `(?i)`. The verdict's reason names the pattern by index
 * and never echoes the command.
 */
export const compileDenyPatterns = (patterns: ReadonlyArray<string>): Either.Either<DenyMatcher, ReadonlyArray<DenyPatternProblem>> => {
  const problems: Array<DenyPatternProblem> = []
  if (patterns.length > MAX_DENY_PATTERNS) {
    problems.push({ index: MAX_DENY_PATTERNS, message: `at most ${MAX_DENY_PATTERNS} patterns are allowed` })
  }
  const compiled: Array<RE2JS> = []
  let total = 0
  patterns.slice(0, MAX_DENY_PATTERNS).forEach((p, index) => {
    const r = compileOne(p)
    if (Either.isLeft(r)) return problems.push({ index, message: r.left })
    total += r.right.programSize()
    if (total > MAX_DENY_TOTAL_PROGRAM_SIZE) {
      return problems.push({ index, message: `the patterns together are too complex (at most ${MAX_DENY_TOTAL_PROGRAM_SIZE})` })
    }
    compiled.push(r.right)
  })
  if (problems.length > 0) return Either.left(problems)
  if (compiled.length === 0) return Either.right(() => ({ blocked: false }))
  return Either.right((command) => {
    if (typeof command !== "string" || utf8Length(command) > MAX_DENY_INPUT_BYTES) {
      return { blocked: true, reason: `command longer than ${MAX_DENY_INPUT_BYTES} bytes cannot be checked against denyCommandPatterns` }
    }
    for (let i = 0; i < compiled.length; i++) {
      try {
        if ((compiled[i] as RE2JS).test(command)) return { blocked: true, reason: `command matches denyCommandPatterns[${i}]` }
      } catch {
        return { blocked: true, reason: `denyCommandPatterns[${i}] could not be evaluated` }
      }
    }
    return { blocked: false }
  })
}
