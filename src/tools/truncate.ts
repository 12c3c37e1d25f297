/**
 * Cuts tool output to MAX_OUTPUT_LINES lines or MAX_OUTPUT_BYTES bytes, whichever comes first,
 * keeping the head and whole lines (a single overlong first line is cut at a UTF-8 boundary).
 */
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../job/toolLimits.ts"

export interface CutLines {
  readonly text: string
  /** Lines kept (a cut first line counts as one). */
  readonly shownLines: number
  readonly totalLines: number
  /** Which limit cut the text; undefined when it fit. */
  readonly cutBy: "lines" | "bytes" | undefined
  /** The first line alone exceeded the byte limit and was cut inside. */
  readonly partialLine: boolean
}

export interface Limits {
  readonly maxLines: number
  readonly maxBytes: number
}

const defaults: Limits = { maxLines: MAX_OUTPUT_LINES, maxBytes: MAX_OUTPUT_BYTES }

const countLines = (text: string): number => {
  if (text.length === 0) return 0
  let n = 1
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++
  return text.endsWith("\n") ? n - 1 : n
}

/** The longest prefix of `s` that is at most `maxBytes` bytes of UTF-8 and ends on a character boundary. */
export const cutUtf8 = (s: string, maxBytes: number): string => {
  const bytes = Buffer.from(s, "utf8")
  if (bytes.length <= maxBytes) return s
  let end = maxBytes
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString("utf8")
}

/** Keeps the head of `text` within the limits; no marker (see `truncateOutput`). */
export const cutLines = (text: string, limits: Limits = defaults): CutLines => {
  const totalLines = countLines(text)
  if (totalLines <= limits.maxLines && text.length <= limits.maxBytes && Buffer.byteLength(text, "utf8") <= limits.maxBytes) {
    return { text, shownLines: totalLines, totalLines, cutBy: undefined, partialLine: false }
  }
  let bytes = 0
  let lines = 0
  let pos = 0
  while (pos < text.length && lines < limits.maxLines) {
    const nl = text.indexOf("\n", pos)
    const end = nl === -1 ? text.length : nl
    const lineBytes = Buffer.byteLength(text.slice(pos, end), "utf8") + (lines > 0 ? 1 : 0)
    if (bytes + lineBytes > limits.maxBytes) break
    bytes += lineBytes
    lines++
    pos = end + 1
  }
  if (lines === 0 && totalLines > 0) {
    const nl = text.indexOf("\n")
    const first = cutUtf8(nl === -1 ? text : text.slice(0, nl), limits.maxBytes)
    return { text: first, shownLines: 1, totalLines, cutBy: "bytes", partialLine: true }
  }
  const kept = text.slice(0, Math.min(pos, text.length)).replace(/\n$/, "")
  if (lines >= totalLines) return { text: kept, shownLines: lines, totalLines, cutBy: undefined, partialLine: false }
  return { text: kept, shownLines: lines, totalLines, cutBy: lines >= limits.maxLines ? "lines" : "bytes", partialLine: false }
}

/** Describes the limit that cut, e.g. "2000-line limit" or "50 KB limit". */
export const limitName = (cutBy: "lines" | "bytes", limits: Limits = defaults): string =>
  cutBy === "lines" ? `${limits.maxLines}-line limit` : `${Math.round(limits.maxBytes / 1024)} KB limit`

/**
 * Cuts `text` like `cutLines` and, when it cut, appends one marker line saying what was cut and how
 * to see more (`hint`, e.g. "narrow the pattern or path").
 */
export const truncateOutput = (text: string, hint: string, limits: Limits = defaults): string => {
  const cut = cutLines(text, limits)
  if (cut.cutBy === undefined) return cut.text
  const what = cut.partialLine
    ? `[output cut: its first line is longer than the ${limitName("bytes", limits)}; ${hint}]`
    : `[output cut at the ${limitName(cut.cutBy, limits)}: showing ${cut.shownLines} of ${cut.totalLines} lines; ${hint}]`
  return `${cut.text}\n${what}`
}
