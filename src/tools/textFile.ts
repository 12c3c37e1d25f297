/** Text-file basics shared by `read` and grep's workers (no Effect, so a worker loads it cheaply). */

/** How far into a file the binary check looks for a NUL byte. */
export const BINARY_SNIFF_BYTES = 8192

/** Splits file text into lines without the terminators ("\n" or "\r\n"); a final newline ends the last line. */
export const splitLines = (text: string): Array<string> => {
  if (text.length === 0) return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
}
