/**
 * The auto-escaping `html` tagged template: every interpolation is escaped unless it already is
 * `Html` (a nested template); arrays are joined; `raw()` is the only way around escaping.
 */

/** Markup that is already safe: only `html` and `raw` make one. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/** What may be interpolated: text (escaped), numbers, nested markup, lists; null, undefined and booleans render nothing. */
export type Interpolation = Html | string | number | bigint | boolean | null | undefined | ReadonlyArray<Interpolation>

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;"
}

/** Escapes text for element content and for quoted attribute values alike. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (c) => ENTITIES[c] ?? c)

const render = (value: Interpolation): string => {
  if (value instanceof Html) return value.text
  if (value === null || value === undefined || typeof value === "boolean") return ""
  if (typeof value === "string") return escapeHtml(value)
  if (typeof value === "number" || typeof value === "bigint") return escapeHtml(String(value))
  return value.map(render).join("")
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolation>): Html => {
  let out = strings[0] ?? ""
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? "")
  })
  return new Html(out)
}

/** Trusted markup as is. Every caller says why its text is safe. */
export const raw = (text: string): Html => new Html(text)

/** Markup items separated by `separator` (escaped like any interpolation). */
export const joinHtml = (items: ReadonlyArray<Interpolation>, separator: Interpolation): Html =>
  html`${items.flatMap((item, i) => (i === 0 ? [item] : [separator, item]))}`
