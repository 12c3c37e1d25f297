/**
 * A line diff (Myers' O(ND) shortest edit script after trimming the common prefix and suffix), its
 * grouping into hunks with context, and the file-by-file diff of two agent packages.
 */

type DiffOp = "same" | "add" | "del"

export interface DiffLine {
  readonly op: DiffOp
  readonly text: string
  /** 1-based line number in the old text (null for an added line). */
  readonly oldLine: number | null
  /** 1-based line number in the new text (null for a deleted line). */
  readonly newLine: number | null
}

/** Past this many edits the diff stops searching and reports the middle as replaced (bounded time and memory). */
const MAX_EDITS = 4000

/** Lines of a text; a final line break does not start another line. */
export const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

type Edit = { readonly op: DiffOp; readonly a: number; readonly b: number }

/** Myers' greedy forward search, keeping each round's frontier (only the window that round can touch). */
const myers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxEdits: number): Array<Edit> | undefined => {
  const n = a.length
  const m = b.length
  const max = n + m
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  const trace: Array<Int32Array> = []
  for (let d = 0; d <= Math.min(max, maxEdits); d++) {
    // Round d reads k-1 and k+1 for k in [-d, d]: keep [-d-1, d+1] of the frontier before it.
    trace.push(v.slice(offset - d - 1, offset + d + 2))
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0))
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[offset + k] = x
      if (x >= n && y >= m) return backtrack(trace, n, m)
    }
  }
  return undefined
}

const backtrack = (trace: ReadonlyArray<Int32Array>, n: number, m: number): Array<Edit> => {
  const edits: Array<Edit> = []
  let x = n
  let y = m
  for (let d = trace.length - 1; d >= 0; d--) {
    const frame = trace[d] ?? new Int32Array(0)
    const at = (k: number) => frame[k + d + 1] ?? 0
    const k = x - y
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
    const prevX = at(prevK)
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      edits.push({ op: "same", a: x - 1, b: y - 1 })
      x--
      y--
    }
    if (d > 0) edits.push(x === prevX ? { op: "add", a: x, b: prevY } : { op: "del", a: prevX, b: y })
    x = prevX
    y = prevY
  }
  return edits.reverse()
}

/** The edit script turning `oldLines` into `newLines`: every line once, in order, with its line numbers. */
export const lineDiff = (oldLines: ReadonlyArray<string>, newLines: ReadonlyArray<string>, maxEdits = MAX_EDITS): Array<DiffLine> => {
  let start = 0
  while (start < oldLines.length && start < newLines.length && oldLines[start] === newLines[start]) start++
  let endOld = oldLines.length
  let endNew = newLines.length
  while (endOld > start && endNew > start && oldLines[endOld - 1] === newLines[endNew - 1]) {
    endOld--
    endNew--
  }
  const a = oldLines.slice(start, endOld)
  const b = newLines.slice(start, endNew)
  const middle = myers(a, b, maxEdits) ?? [
    ...a.map((_, i): Edit => ({ op: "del", a: i, b: 0 })),
    ...b.map((_, i): Edit => ({ op: "add", a: 0, b: i }))
  ]
  const out: Array<DiffLine> = []
  for (let i = 0; i < start; i++) out.push({ op: "same", text: oldLines[i] ?? "", oldLine: i + 1, newLine: i + 1 })
  for (const e of middle) {
    if (e.op === "same") out.push({ op: "same", text: a[e.a] ?? "", oldLine: start + e.a + 1, newLine: start + e.b + 1 })
    else if (e.op === "del") out.push({ op: "del", text: a[e.a] ?? "", oldLine: start + e.a + 1, newLine: null })
    else out.push({ op: "add", text: b[e.b] ?? "", oldLine: null, newLine: start + e.b + 1 })
  }
  for (let i = 0; i < oldLines.length - endOld; i++) {
    out.push({ op: "same", text: oldLines[endOld + i] ?? "", oldLine: endOld + i + 1, newLine: endNew + i + 1 })
  }
  return out
}

export interface Hunk {
  /** Unchanged lines left out before this hunk. */
  readonly skippedBefore: number
  readonly lines: ReadonlyArray<DiffLine>
}

/** Changed lines with `context` unchanged lines around them; longer unchanged runs are left out and counted. */
export const hunks = (lines: ReadonlyArray<DiffLine>, context = 3): Array<Hunk> => {
  const keep = new Array<boolean>(lines.length).fill(false)
  lines.forEach((line, i) => {
    if (line.op === "same") return
    for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) keep[j] = true
  })
  const out: Array<Hunk> = []
  let skipped = 0
  let current: { skippedBefore: number; lines: Array<DiffLine> } | undefined
  lines.forEach((line, i) => {
    if (keep[i] === true) {
      if (current === undefined) {
        current = { skippedBefore: skipped, lines: [] }
        skipped = 0
      }
      current.lines.push(line)
      return
    }
    if (current !== undefined) out.push(current)
    current = undefined
    skipped++
  })
  if (current !== undefined) out.push(current)
  return out
}

export interface FileDiff {
  readonly path: string
  readonly change: "added" | "removed" | "changed" | "unchanged"
  readonly added: number
  readonly removed: number
  readonly lines: ReadonlyArray<DiffLine>
}

type File = { readonly path: string; readonly content: string }

/** Every file of either package (old order first, then new files), each with its line diff. */
export const diffFiles = (oldFiles: ReadonlyArray<File>, newFiles: ReadonlyArray<File>): Array<FileDiff> => {
  const oldByPath = new Map(oldFiles.map((f) => [f.path, f.content]))
  const newByPath = new Map(newFiles.map((f) => [f.path, f.content]))
  const paths = [...new Set([...oldFiles.map((f) => f.path), ...newFiles.map((f) => f.path)])]
  return paths.map((path) => {
    const before = oldByPath.get(path)
    const after = newByPath.get(path)
    const lines = lineDiff(splitLines(before ?? ""), splitLines(after ?? ""))
    const added = lines.filter((l) => l.op === "add").length
    const removed = lines.filter((l) => l.op === "del").length
    const change = before === undefined ? "added" : after === undefined ? "removed" : before === after ? "unchanged" : "changed"
    return { path, change, added, removed, lines }
  })
}
