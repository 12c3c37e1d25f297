/**
 * The loop guard (spec "job.failed reasons", loop). Two rules:
 * - repeats: the same tool with the same arguments (canonical JSON) got the same answer 12 times since
 *   the job last got a call+answer pair it had not seen before. Blocked calls count (their answer is
 *   the block); codemode's inner calls never reach this guard.
 * - streaming: one turn streamed more than 150,000 characters of thinking and text without a tool
 *   call completing, or more than 400,000 characters of tool-call arguments.
 * From the 5th repeat on, the tool result carries a nudge; the nudge is not part of the answer the
 * guard compares, so it cannot change the 12 rule.
 */
const REPEAT_LIMIT = 12
export const NUDGE_AT = 5
const TEXT_LIMIT = 150_000
const TOOL_ARGS_LIMIT = 400_000

/** JSON with object keys sorted at every depth: key order and whitespace do not matter. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

const digest = (s: string): string => new Bun.CryptoHasher("sha256").update(s).digest("hex")

export type RepeatVerdict =
  | { readonly _tag: "Novel" }
  | { readonly _tag: "Repeat"; readonly count: number; readonly nudge: string | undefined }
  | { readonly _tag: "Loop"; readonly message: string }

export class RepeatGuard {
  /** Every call+answer pair of the job so far (digests only: no content is kept around). */
  private readonly seen = new Set<string>()
  /** Counts per pair since the last novel pair. */
  private counts = new Map<string, number>()

  /** Records one finished call; `answer` is what the model got back (with its success flag). */
  record(tool: string, args: unknown, success: boolean, answer: string): RepeatVerdict {
    const key = digest(`${tool}\u0000${canonicalJson(args)}\u0000${success ? 1 : 0}\u0000${answer}`)
    if (!this.seen.has(key)) {
      this.seen.add(key)
      this.counts = new Map([[key, 1]])
      return { _tag: "Novel" }
    }
    const count = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, count)
    if (count >= REPEAT_LIMIT) {
      return { _tag: "Loop", message: `stopped: ${tool} was called with the same arguments ${count} times` }
    }
    const nudge =
      count >= NUDGE_AT
        ? `\n\n[kintsugi] You have called ${tool} with these same arguments ${count} times and got the same answer each time. ` +
          `Repeating it will not change the result; the job is stopped at ${REPEAT_LIMIT}.`
        : undefined
    return { _tag: "Repeat", count, nudge }
  }
}

/** Per-turn streaming counters; `reset` at the start of every model call. */
export class StreamGuard {
  private thinking = 0
  private text = 0
  private toolArgs = 0

  reset(): void {
    this.thinking = 0
    this.text = 0
    this.toolArgs = 0
  }

  /** A tool call completed inside the stream: the text run before it was not idle talk. */
  toolCallCompleted(): void {
    this.thinking = 0
    this.text = 0
  }

  /** Returns the loop message once a limit is passed, else undefined. */
  add(kind: "thinking" | "text" | "toolArgs", chars: number): string | undefined {
    if (kind === "toolArgs") {
      this.toolArgs += chars
      return this.toolArgs > TOOL_ARGS_LIMIT
        ? `stopped: one turn produced ${Math.ceil(this.toolArgs / 1000)}k characters of tool-call arguments`
        : undefined
    }
    if (kind === "thinking") this.thinking += chars
    else this.text += chars
    const total = this.thinking + this.text
    if (total <= TEXT_LIMIT) return undefined
    const what = this.thinking >= this.text ? "thinking" : "text"
    return `stopped: one turn produced ${Math.ceil(total / 1000)}k characters of ${what} without a tool call`
  }
}
