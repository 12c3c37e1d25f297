/**
 * grep's matching core, free of Effect so the search workers (grepWorker.ts) load it cheaply: line
 * matchers, the literal prefilters that let most files be skipped without decoding them, and the scan
 * of one file's bytes. A pattern is RE2 syntax (validated by re2js); it runs on the JavaScript engine's
 * own regular expressions when `nativeSource` can translate it exactly and it has no nested repetition,
 * else on re2js (linear time). A native pattern can still take quadratic time on a long line (`\s+$`):
 * grep's hard per-call time limit (a terminated worker) is what guarantees it never stalls a job.
 */
import { RE2JS } from "re2js"
import { BINARY_SNIFF_BYTES, splitLines } from "./textFile.ts"

/** Longest line shown; longer ones are cut around the match. */
const MAX_LINE_CHARS = 500

export interface LineMatcher {
  /** Which engine tests lines: plain substring search, the JS engine's RegExp, or re2js. */
  readonly engine: "literal" | "native" | "re2"
  /** Fast whole-file rejection on raw bytes: false = no line of this file can match. */
  readonly mayMatchBytes: (bytes: Buffer) => boolean
  /** Whole-file rejection on decoded text (a superset of the per-line test). */
  readonly mayMatchText: (text: string) => boolean
  readonly test: (line: string) => boolean
  /** UTF-16 index of the first match in `line`, or -1. */
  readonly indexIn: (line: string) => number
  /**
   * Where in a file's decoded text a match can begin, searching the whole text at once: the first
   * index >= `from` (a line start) where one can, or -1. Every line `test` accepts holds such an index,
   * so only the lines holding one need testing. Undefined: every line is tested.
   */
  readonly nextCandidate?: (text: string, from: number) => number
  /**
   * Byte strings of which every line `test` accepts holds each one (the case-sensitive required
   * literals): only the lines holding one of them need decoding and testing. Undefined: no such string.
   */
  readonly anchors?: ReadonlyArray<Buffer>
  /**
   * For a case-insensitive pattern with a required ASCII literal: the first `limit` lines of `bytes`
   * that `test` accepts, of those holding the literal in any ASCII case (found on the folded bytes).
   * Undefined answer when the file holds U+212A or U+017F for a k or s of the literal: every line is then looked at.
   */
  readonly foldedLines?: (bytes: Buffer, limit: number) => { readonly hits: Array<number>; readonly text: Array<string> } | undefined
}

export interface MatcherOptions {
  readonly literal: boolean
  readonly ignoreCase: boolean
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

// ---------------------------------------------------------------------------------------------------
// RE2 → JavaScript (`u` mode) translation of a safe subset. Anything outside it returns undefined and
// the pattern runs on re2js. Semantics differ between the engines in places this subset avoids or
// rewrites: RE2's `.` excludes only "\n" (JS also "\r", U+2028, U+2029), its `\s` is [\t\n\f\r ] (JS
// adds Unicode spaces), its case folding of `\w`/`\b` (JS `iu` folds U+017F and U+212A into `\w`), and
// syntax JS lacks or reads differently (inline flags, \A, \z, \Q, \x{..}, \pL, [[:alpha:]], named groups).

/** A JS `u`-mode pattern atom for exactly this code point, valid in and out of a class. */
const lit = (cp: number): string =>
  (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f
    ? String.fromCodePoint(cp)
    : `\\u{${cp.toString(16)}}`

const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 9, n: 10, r: 13, f: 12, v: 11, a: 7 }
const isAsciiPunct = (ch: string) => /^[\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]$/.test(ch)
const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/

interface Piece {
  readonly src: string
  /** One character per match (a literal, class, `.` or class escape): what a flattened repeat may hold. */
  readonly single: boolean
  /** Contains a repetition or an alternation (a repeat around it could backtrack exponentially). */
  readonly risky: boolean
  /** May be repeated (not an anchor or word boundary). */
  readonly repeatable: boolean
  /** A group holding exactly `single` atom + greedy `*` or `+`: its atom and operator, for flattening. */
  readonly flat?: { readonly atom: string; readonly op: "*" | "+" } | undefined
}

class Untranslatable extends Error {}
function no(): never {
  throw new Untranslatable()
}

/**
 * The JS source (for flags "u"/"iu", per line) of an RE2 `pattern` when the translation is exact and
 * free of nested repetition, else undefined. `(x+)+`-style groups over one character are flattened to
 * `x+` (same matches); other repeated groups holding a repetition or alternation are refused.
 */
export const nativeSource = (pattern: string, ignoreCase: boolean): string | undefined => {
  const cs = Array.from(pattern)
  let i = 0
  // Case folding: JS `iu` and RE2 agree on ASCII letters (both fold U+212A to k and U+017F to s); beyond
  // ASCII the simple-folding tables of the two engines are not guaranteed identical.
  const char = (ch: string): number => {
    const cp = ch.codePointAt(0) ?? no()
    if (ignoreCase && cp > 0x7f) no()
    return cp
  }
  const escape = (inClass: boolean): { src: string; cp?: number; repeatable: boolean } => {
    const e = cs[i++] ?? no()
    if (e === "d" || e === "D") return { src: `\\${e}`, repeatable: true }
    if (e === "w" || e === "W") return ignoreCase ? no() : { src: `\\${e}`, repeatable: true }
    if (e === "s") return { src: inClass ? "\\t\\n\\f\\r " : "[\\t\\n\\f\\r ]", repeatable: true }
    if (e === "S") return inClass ? no() : { src: "[^\\t\\n\\f\\r ]", repeatable: true }
    if ((e === "b" || e === "B") && !inClass) return ignoreCase ? no() : { src: `\\${e}`, repeatable: false }
    const control = CONTROL_ESCAPES[e]
    if (control !== undefined) return { src: lit(control), cp: control, repeatable: true }
    if (isAsciiPunct(e)) return { src: lit(char(e)), cp: char(e), repeatable: true }
    return no()
  }
  const classMember = (): { src: string; cp?: number } => {
    const ch = cs[i] ?? no()
    if (ch === "[" && cs[i + 1] === ":") no()
    if (ch === "\\") {
      i++
      return escape(true)
    }
    i++
    return { src: lit(char(ch)), cp: char(ch) }
  }
  const charClass = (): Piece => {
    i++ // "["
    let out = "["
    if (cs[i] === "^") {
      out += "^"
      i++
    }
    let first = true
    for (;;) {
      const ch = cs[i] ?? no()
      if (ch === "]" && !first) break
      first = false
      const from = classMember()
      if (cs[i] === "-" && cs[i + 1] !== undefined && cs[i + 1] !== "]") {
        i++
        const to = classMember()
        if (from.cp === undefined || to.cp === undefined || from.cp > to.cp) no()
        out += `${from.src}-${to.src}`
      } else {
        out += from.src
      }
    }
    i++ // "]"
    return { src: `${out}]`, single: true, risky: false, repeatable: true }
  }
  const atom = (): Piece => {
    const ch = cs[i] ?? no()
    if (ch === "(") {
      i++
      if (cs[i] === "?") {
        if (cs[i + 1] !== ":") no()
        i += 2
      }
      const inner = alternation()
      if (cs[i] !== ")") no()
      i++
      return { src: `(?:${inner.src})`, single: false, risky: inner.risky, repeatable: true, flat: inner.flat }
    }
    if (ch === "[") return charClass()
    i++
    if (ch === ".") return { src: "[^\\n]", single: true, risky: false, repeatable: true }
    if (ch === "^" || ch === "$") return { src: ch, single: false, risky: false, repeatable: false }
    if (ch === "\\") {
      const e = escape(false)
      return { src: e.src, single: e.repeatable, risky: false, repeatable: e.repeatable }
    }
    if (ch === "*" || ch === "+" || ch === "?" || ch === ")" || ch === "|") no()
    if (ch === "{" && REPEAT.test(cs.slice(i - 1, i + 24).join(""))) no()
    return { src: lit(char(ch)), single: true, risky: false, repeatable: true }
  }
  /** A repetition operator at `i` (with its lazy `?`), or undefined. */
  const repeatOp = (): { src: string; greedy: "*" | "+" | undefined } | undefined => {
    const ch = cs[i]
    let src: string
    if (ch === "*" || ch === "+" || ch === "?") {
      src = ch
      i++
    } else if (ch === "{") {
      const m = REPEAT.exec(cs.slice(i, i + 24).join(""))
      if (m === null) return undefined
      src = m[0]
      i += m[0].length
    } else return undefined
    const lazy = cs[i] === "?"
    if (lazy) i++
    if (cs[i] === "*" || cs[i] === "+" || cs[i] === "?" || (cs[i] === "{" && REPEAT.test(cs.slice(i, i + 24).join("")))) no()
    return { src: lazy ? `${src}?` : src, greedy: !lazy && (src === "*" || src === "+") ? src : undefined }
  }
  const sequence = (): Piece & { readonly items: number } => {
    let src = ""
    let risky = false
    let items = 0
    let flat: Piece["flat"]
    while (i < cs.length && cs[i] !== "|" && cs[i] !== ")") {
      const a = atom()
      const op = repeatOp()
      items++
      if (op === undefined) {
        src += a.src
        risky ||= a.risky
        flat = undefined
        continue
      }
      if (!a.repeatable) no()
      if (a.risky && (op.src === "?" || op.src === "??")) {
        src += `${a.src}${op.src}` // at most two ways to match: no blow-up
      } else if (a.risky) {
        // (x+)+, (x*)*, (x+)*, (x*)+ over one character x match exactly what x+ / x* match.
        if (a.flat === undefined || op.greedy === undefined) no()
        const plus = a.flat.op === "+" && op.greedy === "+"
        src += `${a.flat.atom}${plus ? "+" : "*"}`
      } else {
        src += `${a.src}${op.src}`
      }
      risky = true
      flat = a.single && op.greedy !== undefined ? { atom: a.src, op: op.greedy } : undefined
    }
    return { src, single: false, risky, repeatable: true, flat: items === 1 ? flat : undefined, items }
  }
  const alternation = (): Piece => {
    const first = sequence()
    if (cs[i] !== "|") return first
    const branches = [first.src]
    while (cs[i] === "|") {
      i++
      branches.push(sequence().src)
    }
    return { src: branches.join("|"), single: false, risky: true, repeatable: true }
  }
  try {
    const out = alternation()
    return i === cs.length ? out.src : undefined
  } catch (e) {
    if (e instanceof Untranslatable) return undefined
    throw e
  }
}

/**
 * Whether a `nativeSource` translation (case-sensitive) can match only ASCII characters: no negated
 * class (`.`, `\S` and `[^…]` translate to one), no \D or \W, no literal beyond U+007F. Such a pattern
 * matches a file's UTF-8 text exactly where it matches the bytes read as Latin-1 (ASCII bytes never
 * occur inside a multi-byte sequence; the other bytes are non-word characters either way), which skips
 * the much dearer UTF-8 decoding of files that cannot match.
 */
const asciiOnly = (src: string): boolean =>
  !src.includes("[^") &&
  !/\\[DW]/.test(src) &&
  Array.from(src.matchAll(/\\u\{([0-9a-f]+)\}/g)).every((m) => Number.parseInt(m[1] ?? "80", 16) < 0x80) &&
  !/[^\x00-\x7f]/.test(src)

// ---------------------------------------------------------------------------------------------------

/**
 * Compiles the model's pattern; throws re2js's syntax error for an invalid one (the caller words it).
 * Literal case-sensitive search is a substring search; otherwise the JS engine where `nativeSource`
 * allows, else re2js.
 */
export const buildMatcher = (pattern: string, opts: MatcherOptions): LineMatcher => {
  if (opts.literal && !opts.ignoreCase) {
    const needle = Buffer.from(pattern, "utf8")
    return {
      engine: "literal",
      mayMatchBytes: (bytes) => bytes.indexOf(needle) !== -1,
      mayMatchText: () => true,
      test: (line) => line.includes(pattern),
      indexIn: (line) => line.indexOf(pattern),
      nextCandidate: (text, from) => text.indexOf(pattern, from),
      ...(needle.length > 0 ? { anchors: [needle] } : {})
    }
  }
  const source = opts.literal ? RE2JS.quote(pattern) : pattern
  const flags = RE2JS.MULTILINE | (opts.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0)
  const re = RE2JS.compile(source, flags)
  const literals = opts.literal ? [pattern] : requiredLiterals(pattern)
  const literal = literals[0]
  const needles = literals.map((l) => Buffer.from(l, "utf8"))
  const folding = literal !== undefined && opts.ignoreCase ? caseInsensitiveFilter(literal) : undefined
  const bytesFilter = literal === undefined ? undefined : opts.ignoreCase ? folding?.mayMatch : exactBytesFilter(needles)
  const exactLiteral = opts.ignoreCase ? undefined : literal
  const anchors = opts.ignoreCase || needles.length === 0 || needles.some((n) => n.length === 0) ? undefined : needles
  const native = nativeSource(source, opts.ignoreCase)
  if (native !== undefined) {
    const line = new RegExp(native, opts.ignoreCase ? "iu" : "u")
    // With "m", ^ and $ also match around "\r" (and U+2028/9): more positions, so still a superset.
    const whole = new RegExp(native, opts.ignoreCase ? "gimu" : "gmu")
    const latin1 = bytesFilter === undefined && !opts.ignoreCase && asciiOnly(native)
    const nextCandidate = (text: string, from: number): number => {
      whole.lastIndex = from
      return whole.exec(text)?.index ?? -1
    }
    const test = (l: string) => (exactLiteral !== undefined && !l.includes(exactLiteral) ? false : line.test(l))
    return {
      engine: "native",
      mayMatchBytes: (bytes) =>
        bytesFilter !== undefined ? bytesFilter(bytes) : !latin1 || nextCandidate(bytes.toString("latin1"), 0) !== -1,
      // The whole-text search is nextCandidate's, made while scanning.
      mayMatchText: () => true,
      test,
      indexIn: (l) => l.search(line),
      nextCandidate,
      ...(anchors === undefined ? {} : { anchors }),
      ...(folding === undefined ? {} : { foldedLines: (bytes: Buffer, limit: number) => folding.lines(bytes, test, limit) })
    }
  }
  // Whole-file tests are a superset of line tests only while ^ and $ stay line anchors (no inline
  // flags, no \A or \z) and no "\r" sits before a line end ($ does not match before "\r\n").
  const wholeFileOk = !source.includes("(?") && !/\\[Az]/.test(source)
  const test = (l: string) => (exactLiteral !== undefined && !l.includes(exactLiteral) ? false : re.test(l))
  return {
    engine: "re2",
    mayMatchBytes: (bytes) => (bytesFilter !== undefined ? bytesFilter(bytes) : !wholeFileOk || bytes.indexOf(13) !== -1 || re.test(bytes)),
    mayMatchText: (text) => !wholeFileOk || text.includes("\r") || re.test(text),
    test,
    indexIn: (l) => {
      const m = re.matcher(l)
      return m.find() ? m.start() : -1
    },
    ...(anchors === undefined ? {} : { anchors }),
    ...(folding === undefined ? {} : { foldedLines: (bytes: Buffer, limit: number) => folding.lines(bytes, test, limit) })
  }
}

const exactBytesFilter = (needles: ReadonlyArray<Buffer>) => (bytes: Buffer) => needles.every((n) => bytes.indexOf(n) !== -1)

/**
 * A byte prefilter for a case-insensitive ASCII literal: every byte of the file and of the literal is
 * OR-ed with 0x20 (caseFold), then one memmem. That folds ASCII letters to lower case and maps a few
 * punctuation pairs onto each other (`@` and `` ` ``, `[` and `{`…), which only adds candidates (the
 * line test decides); bytes of multi-byte UTF-8 stay >= 0x80. Non-ASCII text folds onto ASCII letters
 * only through U+212A KELVIN SIGN (k) and U+017F LONG S (s), so a file holding the one for a letter of
 * the literal passes; the fold notes whether any byte is >= 0x80, and a file of ASCII bytes alone is not
 * searched for them.
 * Undefined for a non-ASCII literal.
 */
const caseInsensitiveFilter = (
  literal: string
):
  | {
      readonly mayMatch: (bytes: Buffer) => boolean
      /** LineMatcher.foldedLines, with the matcher's line test. */
      readonly lines: (bytes: Buffer, test: (line: string) => boolean, limit: number) => LineHits | undefined
    }
  | undefined => {
  if (!/^[\x20-\x7e]+$/.test(literal)) return undefined
  const special = [
    ...(/k/i.test(literal) ? [Buffer.from("\u212a", "utf8")] : []),
    ...(/s/i.test(literal) ? [Buffer.from("\u017f", "utf8")] : [])
  ]
  const folded = Buffer.from(Array.from(Buffer.from(literal, "latin1"), (c) => c | 0x20))
  const fold = caseFold()
  const hasSpecial = (bytes: Buffer) => special.some((n) => bytes.indexOf(n) !== -1)
  return {
    mayMatch: (bytes) => {
      const { out, high } = fold(bytes)
      return out.indexOf(folded) !== -1 || (high && hasSpecial(bytes))
    },
    lines: (bytes, test, limit) => {
      const { out, high } = fold(bytes)
      return high && hasSpecial(bytes) ? undefined : testAnchoredLines(bytes, out, folded, test, limit)
    }
  }
}

/** Bytes OR-ed with 0x20, in a buffer of the fold's own (valid until its next call), and whether any byte is >= 0x80. */
type Fold = (bytes: Buffer) => { readonly out: Buffer; readonly high: boolean }

let sharedFold: Fold | undefined

/** The thread's fold: WebAssembly SIMD where the engine has it (simdFold), else JavaScript (wordFold). */
const caseFold = (): Fold => {
  sharedFold ??= simdFold() ?? wordFold()
  return sharedFold
}

/**
 * The fold in JavaScript, four bytes at a time from the workers' 4-byte aligned read buffer (anything
 * else is copied first).
 */
const wordFold = (): Fold => {
  let scratch = new Uint32Array(16 * 1024)
  return (bytes) => {
    const words = bytes.length >>> 2
    if (scratch.length <= words) scratch = new Uint32Array(Math.max(words + 1, scratch.length * 2))
    const out = Buffer.from(scratch.buffer, 0, bytes.length)
    const aligned = bytes.byteOffset % 4 === 0
    if (!aligned) bytes.copy(out)
    let high = 0
    const src = aligned ? new Uint32Array(bytes.buffer, bytes.byteOffset, words) : scratch
    for (let i = 0; i < words; i++) {
      const w = src[i] ?? 0
      high |= w
      scratch[i] = w | 0x20202020
    }
    for (let i = words * 4; i < bytes.length; i++) {
      const b = bytes[i] ?? 0
      high |= b
      out[i] = b | 0x20
    }
    return { out, high: (high & 0x80808080) !== 0 }
  }
}

/**
 * A WebAssembly module folding 16 bytes at a time; its `f(n)` folds the first `n` bytes of its memory
 * `m` in place (`n` a multiple of 16) and returns the bitmask of the high bits seen (0: every byte < 0x80):
 *   (module (memory (export "m") 1)
 *     (func (export "f") (param $n i32) (result i32) (local $i i32) (local $seen v128) (local $v v128) (local $bit v128)
 *       (local.set $bit (i8x16.splat (i32.const 0x20)))
 *       (block (loop
 *         (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
 *         (local.set $seen (v128.or (local.tee $v (v128.load (local.get $i))) (local.get $seen)))
 *         (v128.store (local.get $i) (v128.or (local.get $v) (local.get $bit)))
 *         (local.set $i (i32.add (local.get $i) (i32.const 16)))
 *         (br 0)))
 *       (i8x16.bitmask (local.get $seen))))
 */
const SIMD_FOLD_WASM =
  "0061736d0100000001060160017f017f030201000503010001070902016d0200016600000a42014002017f037b4120fd0f210402400340" +
  "200120004f0d012001fd00000022032002fd502102200120032004fd50fd0b0000200141106a21010c000b0b2002fd640b"

/** The fold in WebAssembly SIMD (compiled at once, no JIT warm-up to wait for); undefined where the engine lacks it. */
const simdFold = (): Fold | undefined => {
  let exports: WebAssembly.Instance["exports"]
  try {
    const wasm = Buffer.from(SIMD_FOLD_WASM, "hex")
    if (!WebAssembly.validate(wasm)) return undefined
    exports = new WebAssembly.Instance(new WebAssembly.Module(wasm)).exports
  } catch {
    return undefined
  }
  const memory = exports["m"]
  const f = exports["f"]
  if (!(memory instanceof WebAssembly.Memory) || typeof f !== "function") return undefined
  let view = new Uint8Array(memory.buffer)
  return (bytes) => {
    const n = (bytes.length + 15) & ~15
    if (view.length < n) {
      memory.grow(Math.ceil((n - view.length) / 65536))
      view = new Uint8Array(memory.buffer)
    }
    view.set(bytes)
    // The last block's bytes past the file: zeros, which fold to 0x20 and add no high bit.
    view.fill(0, bytes.length, n)
    const seen: unknown = f(n)
    return { out: Buffer.from(memory.buffer, 0, bytes.length), high: seen !== 0 }
  }
}

/** The two folds (SIMD undefined where the engine lacks it), for tests that compare them. @public */
export const caseFolds = (): { readonly simd: Fold | undefined; readonly words: Fold } => ({ simd: simdFold(), words: wordFold() })

// ---------------------------------------------------------------------------------------------------

/**
 * What one file holds for a search: its first `limit` matching lines (0-based) with their text cut
 * around the match, and every line within `context` of one of them cut from its start. Plain data: it
 * crosses from a worker to grep.
 */
export interface FileHits {
  readonly hits: ReadonlyArray<number>
  readonly hitText: ReadonlyArray<string>
  /** Sorted line indexes of `ctxText` (the hit lines included; the last one is the last line any block may show). */
  readonly ctxLines: ReadonlyArray<number>
  readonly ctxText: ReadonlyArray<string>
}

const shorten = (line: string, at: number): string => {
  if (line.length <= MAX_LINE_CHARS) return line
  const start = Math.max(0, Math.min(at - 100, line.length - MAX_LINE_CHARS))
  return `${start > 0 ? "…" : ""}${line.slice(start, start + MAX_LINE_CHARS)}${start + MAX_LINE_CHARS < line.length ? "…" : ""}`
}

/** A NUL byte in the first BINARY_SNIFF_BYTES: a binary file, never searched. */
export const isBinaryHead = (head: Buffer): boolean => head.subarray(0, BINARY_SNIFF_BYTES).includes(0)

/** A file's first matching lines: 0-based indexes and their text; `lines` when every line was cut out. */
interface LineHits {
  readonly hits: Array<number>
  readonly text: Array<string>
  readonly lines?: ReadonlyArray<string>
}

const testEveryLine = (text: string, m: LineMatcher, limit: number): LineHits => {
  const lines = splitLines(text)
  const hits: Array<number> = []
  const hitLines: Array<string> = []
  for (let i = 0; i < lines.length && hits.length < limit; i++) {
    const line = lines[i] ?? ""
    if (m.test(line)) {
      hits.push(i)
      hitLines.push(line)
    }
  }
  return { hits, text: hitLines, lines }
}

/**
 * testEveryLine's answer, testing only the lines (cut as splitLines cuts them) that hold a place where
 * `next` says a match can begin: a large file with a few matches is never split into lines.
 */
const testCandidateLines = (text: string, next: (text: string, from: number) => number, m: LineMatcher, limit: number): LineHits => {
  const hits: Array<number> = []
  const hitLines: Array<string> = []
  let line = 0
  let start = 0
  while (hits.length < limit && start < text.length) {
    const at = next(text, start)
    if (at === -1) break
    for (let nl = text.indexOf("\n", start); nl !== -1 && nl < at; nl = text.indexOf("\n", start)) {
      line++
      start = nl + 1
    }
    // After a final "\n" there is no line (splitLines drops the empty rest).
    if (start >= text.length) break
    const nl = text.indexOf("\n", start)
    const end = nl === -1 ? text.length : nl
    const cut = text.slice(start, end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end)
    if (m.test(cut)) {
      hits.push(line)
      hitLines.push(cut)
    }
    line++
    start = end + 1
  }
  return { hits, text: hitLines }
}

/** The anchor with the fewest occurrences in `bytes` (counting each only up to the fewest so far); anchors are never empty. */
const rarestAnchor = (bytes: Buffer, anchors: ReadonlyArray<Buffer>): Buffer | undefined => {
  if (anchors.length === 1) return anchors[0]
  let best: Buffer | undefined
  let fewest = Number.POSITIVE_INFINITY
  for (const a of anchors) {
    let n = 0
    for (let at = bytes.indexOf(a); at !== -1 && n < fewest; at = bytes.indexOf(a, at + a.length)) n++
    if (n < fewest) {
      best = a
      fewest = n
    }
  }
  return best
}

/**
 * testCandidateLines' answer (lines cut as splitLines cuts them) straight from the bytes: only the lines
 * holding `anchor` in `haystack` (the bytes themselves, or their case fold: same length, same offsets)
 * are decoded and tested, and lines are counted only up to the last hit. A line is found from its
 * bytes: UTF-8 never encodes anything but a line feed with byte 0x0A.
 */
const testAnchoredLines = (bytes: Buffer, haystack: Buffer, anchor: Buffer, test: (line: string) => boolean, limit: number): LineHits => {
  const hits: Array<number> = []
  const hitLines: Array<string> = []
  let line = 0
  let counted = 0
  for (let at = haystack.indexOf(anchor); at !== -1 && hits.length < limit; ) {
    const start = bytes.lastIndexOf(10, at) + 1
    const nl = bytes.indexOf(10, at)
    const end = nl === -1 ? bytes.length : nl
    const cut = bytes.toString("utf8", start, end > start && bytes[end - 1] === 13 ? end - 1 : end)
    if (test(cut)) {
      for (let k = bytes.indexOf(10, counted); k !== -1 && k < start; k = bytes.indexOf(10, k + 1)) line++
      counted = start
      hits.push(line)
      hitLines.push(cut)
    }
    if (nl === -1) break
    at = haystack.indexOf(anchor, nl + 1)
  }
  return { hits, text: hitLines }
}

/** The lines an anchor finds (LineMatcher.anchors, foldedLines), or undefined when every line must be looked at. */
const anchoredLines = (bytes: Buffer, m: LineMatcher, limit: number): LineHits | undefined => {
  if (m.anchors !== undefined) {
    const anchor = rarestAnchor(bytes, m.anchors)
    return anchor === undefined ? undefined : testAnchoredLines(bytes, bytes, anchor, m.test, limit)
  }
  return m.foldedLines?.(bytes, limit)
}

/** Scans one text file's bytes; undefined when no line matches (binary files included). */
export const scanBytes = (bytes: Buffer, m: LineMatcher, context: number, limit: number): FileHits | undefined =>
  isBinaryHead(bytes) ? undefined : scanTextBytes(bytes, m, context, limit)

/** scanBytes for bytes already known not to have a binary head (the workers' read asked isBinaryHead). */
export const scanTextBytes = (bytes: Buffer, m: LineMatcher, context: number, limit: number): FileHits | undefined => {
  if (!m.mayMatchBytes(bytes)) return undefined
  const anchored = context === 0 ? anchoredLines(bytes, m, limit) : undefined
  if (anchored !== undefined) {
    if (anchored.hits.length === 0) return undefined
    return {
      hits: anchored.hits,
      hitText: anchored.text.map((l) => shorten(l, m.indexIn(l))),
      ctxLines: anchored.hits,
      ctxText: anchored.text.map((l) => shorten(l, 0))
    }
  }
  const text = bytes.toString("utf8")
  if (!m.mayMatchText(text)) return undefined
  const found = m.nextCandidate === undefined ? testEveryLine(text, m, limit) : testCandidateLines(text, m.nextCandidate, m, limit)
  const { hits } = found
  if (hits.length === 0) return undefined
  const hitText = found.text.map((l) => shorten(l, m.indexIn(l)))
  if (context === 0) return { hits, hitText, ctxLines: hits, ctxText: found.text.map((l) => shorten(l, 0)) }
  const lines = found.lines ?? splitLines(text)
  const ctxLines: Array<number> = []
  for (const h of hits) {
    const last = ctxLines[ctxLines.length - 1] ?? -1
    for (let k = Math.max(last + 1, h - context); k <= Math.min(lines.length - 1, h + context); k++) ctxLines.push(k)
  }
  return { hits, hitText, ctxLines, ctxText: ctxLines.map((k) => shorten(lines[k] ?? "", 0)) }
}

/** Text of the warm-up's own: source-like ASCII lines, one in 1000 holding each warm-up pattern. */
const warmUpText = (bytes: number): Buffer => {
  const lines: Array<string> = []
  for (let i = 0, size = 0; size < bytes; i++) {
    const line =
      i % 1000 === 999
        ? `import { handler${i} } from "./module.js"; export const value${i} = handler${i}() // TODO ${i % 60}:${i % 24}`
        : `  const item${i} = items.filter((entry) => entry.id !== ${i}).map((entry) => entry.name)`
    lines.push(line)
    size += line.length + 1
  }
  return Buffer.from(lines.join("\n"), "latin1")
}

/** One pattern per kind of scan: literal, case-insensitive literal, regex with and without a required literal. */
const WARM_UP_PATTERNS: ReadonlyArray<readonly [string, MatcherOptions]> = [
  ["import", { literal: true, ignoreCase: false }],
  ["TODO", { literal: true, ignoreCase: true }],
  ["export\\s+const\\s+\\w+", { literal: false, ignoreCase: false }],
  ["[0-9]+:[0-9]+", { literal: false, ignoreCase: false }]
]

/**
 * Runs each kind of scan over text of its own, on pieces of the sizes files have and on large ones,
 * so that a search worker's first search finds the scanning code compiled by the JIT (the job child's
 * warm-up asks its workers for this before its job arrives). Reads no file.
 */
export const warmUpScan = (): void => {
  const text = warmUpText(256 * 1024)
  for (const [pattern, opts] of WARM_UP_PATTERNS) {
    const m = buildMatcher(pattern, opts)
    // Pieces start at offset 0, as the workers' reads do (their read buffer is 4-byte aligned).
    for (let i = 0; i < 1500; i++) scanTextBytes(text.subarray(0, 512 + ((i * 1021) % (12 * 1024))), m, 0, 100)
    for (let i = 0; i < 24; i++) scanTextBytes(text, m, 0, 100)
  }
}

/** A run of consecutive lines of one file to show; `matches` are 1-based line numbers. */
export interface Block {
  readonly display: string
  readonly first: number
  readonly lines: ReadonlyArray<string>
  readonly matches: ReadonlySet<number>
}

/**
 * The blocks of a file's first `take` hits: matches whose context ranges touch or overlap merge into
 * one block; a hit line beyond `take` inside a block shows as a context line.
 */
export const blocksOf = (file: FileHits, display: string, context: number, take: number): Array<Block> => {
  const hits = file.hits.slice(0, take)
  const ctx = new Map<number, string>()
  file.ctxLines.forEach((k, j) => ctx.set(k, file.ctxText[j] ?? ""))
  const hitText = new Map<number, string>()
  hits.forEach((h, j) => hitText.set(h, file.hitText[j] ?? ""))
  const blocks: Array<Block> = []
  // The file's last line, or (when that is further) the last line within `context` of its last hit.
  const last = file.ctxLines[file.ctxLines.length - 1] ?? 0
  let b = 0
  while (b < hits.length) {
    const from = Math.max(0, (hits[b] ?? 0) - context)
    let to = Math.min(last, (hits[b] ?? 0) + context)
    const matches = new Set<number>()
    while (b < hits.length && (hits[b] ?? 0) - context <= to + 1) {
      const h = hits[b] ?? 0
      matches.add(h + 1)
      to = Math.min(last, h + context)
      b++
    }
    const shown: Array<string> = []
    for (let k = from; k <= to; k++) shown.push(matches.has(k + 1) ? (hitText.get(k) ?? "") : (ctx.get(k) ?? ""))
    blocks.push({ display, first: from + 1, lines: shown, matches })
  }
  return blocks
}
