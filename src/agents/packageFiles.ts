/**
 * The file layer of package parsing: names, duplicates, size caps and UTF-8 text, every problem at
 * once. What survives is a list of checked text files for the format checks in AgentPackage.ts.
 */
import type { Problem } from "../contract/Problem.ts"
import { displayName, duplicateNames, pathProblems } from "../contract/packagePaths.ts"

export const MAX_PACKAGE_FILES = 200
export const MAX_PACKAGE_FILE_BYTES = 256 * 1024
export const MAX_PACKAGE_BYTES = 1024 * 1024

/** A package file as the editor, the import endpoint or a reader hands it over. */
export interface RawPackageFile {
  readonly path: string
  readonly content: string | Uint8Array
}

export interface TextFile {
  readonly path: string
  readonly text: string
}

/** Marks the whole package in a problem path. */
export const PACKAGE_PATH = "(package)"

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const byteLength = (c: string | Uint8Array) => (typeof c === "string" ? Buffer.byteLength(c, "utf8") : c.byteLength)

/** Text of a file, or why it is not text. A byte order mark is kept (the file is verbatim). */
const decodeText = (content: string | Uint8Array): { text: string } | { problem: string } => {
  let text: string
  if (typeof content === "string") {
    if (LONE_SURROGATE.test(content)) return { problem: "is not valid Unicode text (lone surrogate)" }
    text = content
  } else {
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(content)
    } catch {
      return { problem: "is not valid UTF-8 text" }
    }
  }
  if (text.includes("\u0000")) return { problem: "contains NUL characters: binary files are not supported" }
  return { text }
}

/**
 * Checks names, duplicates (case and Unicode folding), sizes and encoding. Returns the files that
 * passed, and every problem; a file with a problem is left out of `files`.
 */
export const checkPackageFiles = (
  input: ReadonlyArray<RawPackageFile>
): { readonly files: Array<TextFile>; readonly problems: Array<Problem> } => {
  if (input.length > MAX_PACKAGE_FILES) {
    return { files: [], problems: [{ path: PACKAGE_PATH, message: `more than ${MAX_PACKAGE_FILES} files (found ${input.length})` }] }
  }
  const problems: Array<Problem> = []
  const bad = new Set<number>()
  input.forEach((f, i) => {
    for (const message of pathProblems(f.path)) {
      problems.push({ path: displayName(f.path), message })
      bad.add(i)
    }
  })
  for (const { index, firstName } of duplicateNames(input.map((f) => f.path))) {
    const name = input[index]?.path ?? ""
    problems.push({
      path: displayName(name),
      message: `duplicate of "${displayName(firstName)}" (names are compared ignoring case and Unicode normalisation)`
    })
    bad.add(index)
  }
  let total = 0
  const files: Array<TextFile> = []
  input.forEach((f, i) => {
    const size = byteLength(f.content)
    total += size
    if (size > MAX_PACKAGE_FILE_BYTES) {
      problems.push({ path: displayName(f.path), message: `larger than ${MAX_PACKAGE_FILE_BYTES} bytes (${size})` })
      return
    }
    if (bad.has(i)) return
    const decoded = decodeText(f.content)
    if ("problem" in decoded) problems.push({ path: displayName(f.path), message: decoded.problem })
    else files.push({ path: f.path, text: decoded.text })
  })
  if (total > MAX_PACKAGE_BYTES) {
    problems.push({ path: PACKAGE_PATH, message: `the files together are larger than ${MAX_PACKAGE_BYTES} bytes (${total})` })
  }
  return { files, problems }
}
