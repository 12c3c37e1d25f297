/**
 * File names inside an agent package or ZIP: the one check both use (no absolute, `..`, backslash,
 * drive letters, NUL or control characters), the duplicate key (case + Unicode NFC folding), and a
 * display form that never writes raw control characters to a terminal or log.
 */

/** UTF-8 bytes of a whole relative path. */
const MAX_PATH_BYTES = 255

/** C0, DEL and C1 controls (NUL is reported on its own). */
const CONTROL = /[\u0001-\u001f\u007f-\u009f]/

/**
 * Every problem with one relative file name, as short messages; [] when the name is acceptable.
 * Names use `/` as the only separator. A trailing `/` (a ZIP directory entry) must be stripped first.
 */
export const pathProblems = (name: string): Array<string> => {
  if (name.length === 0) return ["empty file name"]
  const problems: Array<string> = []
  if (Buffer.byteLength(name, "utf8") > MAX_PATH_BYTES) problems.push(`file name longer than ${MAX_PATH_BYTES} bytes`)
  if (name.includes("\u0000")) problems.push("file name contains a NUL character")
  if (CONTROL.test(name)) problems.push("file name contains a control character")
  if (name.includes("\\")) problems.push("file name contains a backslash (use / between folders)")
  if (name.startsWith("/")) problems.push("absolute paths are not allowed")
  if (/^[A-Za-z]:/.test(name)) problems.push("drive letters are not allowed")
  const segments = name.split("/")
  // A leading "/" already got its own message; its empty first segment is not a second problem.
  const inner = name.startsWith("/") ? segments.slice(1) : segments
  if (inner.includes("..")) problems.push("`..` segments are not allowed")
  if (inner.includes(".")) problems.push("`.` segments are not allowed")
  if (inner.includes("")) problems.push("empty path segments (`//` or a trailing `/`) are not allowed")
  return problems
}

/**
 * The key two names collide on: NFC-normalised and case-folded, so `A.md` / `a.md` and a composed /
 * decomposed `é` are one file on the file systems admins unpack packages onto.
 */
export const foldKey = (name: string): string => name.normalize("NFC").toLowerCase().normalize("NFC")

/** A name safe to print: control characters and NUL become `\uXXXX`; everything else verbatim. */
export const displayName = (name: string): string =>
  name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * Duplicate names after folding: for each later occurrence, the index and the name it collides with.
 * The first occurrence is kept silent, so one clash is one problem.
 */
export const duplicateNames = (names: ReadonlyArray<string>): Array<{ index: number; firstName: string }> => {
  const seen = new Map<string, string>()
  const dups: Array<{ index: number; firstName: string }> = []
  names.forEach((name, index) => {
    const key = foldKey(name)
    const first = seen.get(key)
    if (first === undefined) seen.set(key, name)
    else dups.push({ index, firstName: first })
  })
  return dups
}
