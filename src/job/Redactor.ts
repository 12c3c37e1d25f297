/**
 * One redactor for every sink (security rule 15): each registered secret is replaced whole, and in
 * its base64 and URL-encoded spellings, before an event leaves the kernel. Streamed text is held
 * back just long enough that a secret split across two deltas is still caught.
 */
const MASK = "[redacted]"

export class Redactor {
  private readonly needles: ReadonlyArray<string>

  constructor(secrets: ReadonlyArray<string>) {
    const set = new Set<string>()
    for (const s of secrets) {
      if (s.length < 6) continue // too short to mean anything, and would shred ordinary text
      set.add(s)
      set.add(Buffer.from(s).toString("base64").replace(/=+$/, ""))
      set.add(Buffer.from(s).toString("base64url"))
      set.add(encodeURIComponent(s))
    }
    // Longest first, so a secret is never half-replaced by a shorter one it contains.
    this.needles = [...set].sort((a, b) => b.length - a.length)
  }

  get empty(): boolean {
    return this.needles.length === 0
  }

  /** Replaces every secret in `text`. */
  redact(text: string): string {
    let out = text
    for (const n of this.needles) if (out.includes(n)) out = out.split(n).join(MASK)
    return out
  }

  /** Redacts every string inside a JSON-like value (keys included). */
  redactValue<T>(value: T): T {
    if (this.empty) return value
    return JSON.parse(this.redact(JSON.stringify(value))) as T
  }

  /**
   * How many trailing characters of `text` could be the start of a secret: a streaming sink keeps
   * them back until the next chunk (or the end of the message) decides.
   */
  heldBack(text: string): number {
    let keep = 0
    for (const n of this.needles) {
      for (let len = Math.min(n.length - 1, text.length); len > keep; len--) {
        if (text.endsWith(n.slice(0, len))) {
          keep = len
          break
        }
      }
    }
    return keep
  }
}
