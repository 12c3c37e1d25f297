/**
 * What PostgreSQL can store: `jsonb` and `text` refuse U+0000 and unpaired surrogates, on a server and
 * on the embedded database alike. Text a model wrote may hold either, so values headed for a row pass
 * through here: each such character becomes U+FFFD, in strings and object keys, at any depth. Everything
 * else is returned as it is (the same object when nothing needed a change).
 */

/** U+0000, a high surrogate without its low one, a low surrogate without its high one. */
const FIND = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const EVERY = new RegExp(FIND.source, "g")

const clean = (text: string): string => (FIND.test(text) ? text.replace(EVERY, "\uFFFD") : text)

export const storableJson = <A>(value: A): A => replace(value) as A

const replace = (value: unknown): unknown => {
  if (typeof value === "string") return clean(value)
  if (Array.isArray(value)) {
    let changed = false
    const out = value.map((v) => {
      const r = replace(v)
      if (r !== v) changed = true
      return r
    })
    return changed ? out : value
  }
  if (value !== null && typeof value === "object") {
    let changed = false
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      const key = clean(k)
      const r = replace(v)
      if (key !== k || r !== v) changed = true
      out[key] = r
    }
    return changed ? out : value
  }
  return value
}
