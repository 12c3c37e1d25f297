/**
 * Problems in plain words for the portal: the services' messages are precise but written for the
 * API (`must match [a-z][a-z0-9-]*`, Effect Schema's `Expected an integer, actual NaN`); a person at a
 * form reads what to do instead. The API keeps the original text; only the portal rewrites it.
 */

const NAME_RULE = "must use only lower-case letters, digits and dashes, starting with a letter"

/** The name pattern anywhere in a message ("local skill name "X" must match [a-z]…") in words. */
const NAME_PATTERN = /must match \[a-z\]\[a-z0-9-\]\*(?: \(at most (\d+) characters\)| and be at most (\d+) characters)?/

const REWRITES: ReadonlyArray<readonly [RegExp, (m: RegExpExecArray) => string]> = [
  [/^Expected an integer, actual (?:NaN|".*"|undefined|null)$/, () => "enter a whole number"],
  [/^Expected a (?:positive|non-negative) (?:integer|number), actual .*$/, () => "enter a number above zero"],
  [/^Expected (?:a )?number, actual (?:NaN|".*"|undefined|null)$/, () => "enter a number"],
  [/^Expected (?:a )?string, actual undefined$/, () => "fill this in"],
  [/^is missing$/, () => "fill this in"],
  [/^must not be empty$/, () => "fill this in"],
  [/^Expected (.+), actual (.+)$/, (m) => `must be ${m[1]} (it is ${m[2]})`]
]

/** One message in plain words (unknown messages are kept as they are: they are already sentences). */
export const plainMessage = (message: string): string => {
  const name = NAME_PATTERN.exec(message)
  if (name !== null) {
    const max = name[1] ?? name[2]
    return message
      .replace(NAME_PATTERN, `${NAME_RULE}${max === undefined ? "" : ` (at most ${max} characters)`}`)
      .replace(/^skill name /, "")
  }
  for (const [pattern, rewrite] of REWRITES) {
    const m = pattern.exec(message.trim())
    if (m !== null) return rewrite(m)
  }
  return message
}

/** A path such as `name.md#tools.2` or `models.0.contextWindow` as the words a form uses. */
export const plainPath = (path: string, labels: Readonly<Record<string, string>> = {}): string => {
  const key = path.includes("#") ? path.slice(path.indexOf("#") + 1) : path
  if (labels[key] !== undefined) return labels[key]
  const last =
    key
      .split(".")
      .filter((p) => !/^\d+$/.test(p))
      .pop() ?? key
  return labels[last] ?? last.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase())
}

/** One line of an error summary: the field's words, what to do, and where the field is. */
export interface SummaryItem {
  readonly label: string
  readonly message: string
  /** The id of the element next to the field (its problem slot). */
  readonly target: string
}
