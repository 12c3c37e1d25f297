/**
 * Bounded capture of a process's output: keeps the head and the tail within a byte and line budget
 * while the caller keeps draining the pipe, so a flood (`yes`) costs CPU but never memory.
 */

const NEWLINE = 10

const countNewlines = (b: Uint8Array): number => {
  let n = 0
  for (let i = 0; i < b.length; i++) if (b[i] === NEWLINE) n++
  return n
}

/** Index of the first byte of a UTF-8 sequence at or after `i` (skips continuation bytes). */
const charStartAtOrAfter = (b: Uint8Array, i: number): number => {
  let j = i
  while (j < b.length && ((b[j] as number) & 0xc0) === 0x80) j++
  return j
}

/** Index of the first byte of a UTF-8 sequence at or before `i`. */
const charStartAtOrBefore = (b: Uint8Array, i: number): number => {
  let j = i
  while (j > 0 && j < b.length && ((b[j] as number) & 0xc0) === 0x80) j--
  return j
}

/** End (exclusive) of the first `lines` lines of `b`, or `b.length` if it has fewer. */
const endOfLines = (b: Uint8Array, lines: number): number => {
  let seen = 0
  for (let i = 0; i < b.length; i++) if (b[i] === NEWLINE && ++seen === lines) return i + 1
  return b.length
}

/** Start of the last `lines` lines of `b` (a final unterminated line counts as one). */
const startOfLastLines = (b: Uint8Array, lines: number): number => {
  let seen = b.length > 0 && b[b.length - 1] !== NEWLINE ? 1 : 0
  for (let i = b.length - 2; i >= 0; i--) if (b[i] === NEWLINE && ++seen === lines) return i + 1
  return 0
}

export interface CapturedOutput {
  readonly text: string
  readonly truncated: boolean
  /** Every byte the process wrote, kept or not. */
  readonly totalBytes: number
}

/**
 * Head + tail capture. The head keeps the first half of the budget; the tail retains the last half
 * (plus at most one chunk); `result()` cuts both to whole lines and puts a marker between them that
 * says how much was dropped. Output that fits the budget is returned whole.
 */
export class OutputCapture {
  /** Allocated at the first output: most calls print little or nothing. */
  private head: Uint8Array | undefined
  private readonly headCap: number
  private headLen = 0
  private tail: Array<Uint8Array> = []
  private tailLen = 0
  private totalBytes = 0
  private totalNewlines = 0
  private lastByte = NEWLINE
  private readonly tailRetain: number

  constructor(
    private readonly maxBytes: number,
    private readonly maxLines: number
  ) {
    this.headCap = Math.floor(maxBytes / 2)
    this.tailRetain = maxBytes - this.headCap
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return
    this.totalBytes += chunk.length
    this.totalNewlines += countNewlines(chunk)
    this.lastByte = chunk[chunk.length - 1] as number
    let rest = chunk
    if (this.headLen < this.headCap) {
      this.head ??= new Uint8Array(this.headCap)
      const n = Math.min(this.headCap - this.headLen, rest.length)
      this.head.set(rest.subarray(0, n), this.headLen)
      this.headLen += n
      rest = rest.subarray(n)
      if (rest.length === 0) return
    }
    // Copy: a subarray would pin the producer's whole buffer in memory.
    const keep = rest.length > this.tailRetain ? rest.slice(rest.length - this.tailRetain) : rest.slice()
    this.tail.push(keep)
    this.tailLen += keep.length
    while (this.tail.length > 1 && this.tailLen - (this.tail[0] as Uint8Array).length >= this.tailRetain) {
      this.tailLen -= (this.tail.shift() as Uint8Array).length
    }
  }

  result(): CapturedOutput {
    // Most calls print nothing: no decoder, no copies.
    if (this.totalBytes === 0) return { text: "", truncated: false, totalBytes: 0 }
    const decoder = new TextDecoder()
    const totalLines = this.totalNewlines + (this.lastByte === NEWLINE ? 0 : 1)
    const head = this.head?.subarray(0, this.headLen) ?? new Uint8Array(0)
    const tailAll = Buffer.concat(this.tail)
    if (this.totalBytes <= this.maxBytes && totalLines <= this.maxLines) {
      return { text: decoder.decode(Buffer.concat([head, tailAll])), truncated: false, totalBytes: this.totalBytes }
    }
    // Budget with room for the marker line itself.
    const halfLines = Math.max(1, Math.floor((this.maxLines - 1) / 2))
    const tailBytes = Math.max(0, this.tailRetain - 96)
    let headEnd = endOfLines(head, halfLines)
    if (headEnd === head.length && head.length > 0 && head[head.length - 1] !== NEWLINE) {
      const lastNl = head.lastIndexOf(NEWLINE)
      headEnd = lastNl >= 0 ? lastNl + 1 : charStartAtOrBefore(head, head.length)
    }
    let tail = tailAll.subarray(Math.max(0, tailAll.length - tailBytes))
    // The tail usually starts mid-line: drop that fragment, unless it is most of the tail (one
    // huge line, e.g. minified JSON, whose end is worth more than a clean line start).
    const firstNl = tail.indexOf(NEWLINE)
    const dropFragment = firstNl >= 0 && firstNl < tail.length / 2
    tail = tail.subarray(dropFragment ? firstNl + 1 : charStartAtOrAfter(tail, 0))
    tail = tail.subarray(startOfLastLines(tail, halfLines))
    const keptHead = head.subarray(0, headEnd)
    const linesIn = (b: Uint8Array) => countNewlines(b) + (b.length > 0 && b[b.length - 1] !== NEWLINE ? 1 : 0)
    const cutBytes = this.totalBytes - keptHead.length - tail.length
    const cutLines = Math.max(0, totalLines - linesIn(keptHead) - linesIn(tail))
    const marker = `[... ${cutLines} lines (${cutBytes} bytes) cut; ${this.totalBytes} bytes in total ...]\n`
    const sep = keptHead.length > 0 && keptHead[keptHead.length - 1] !== NEWLINE ? "\n" : ""
    return {
      text: decoder.decode(keptHead) + sep + marker + decoder.decode(tail),
      truncated: true,
      totalBytes: this.totalBytes
    }
  }
}
