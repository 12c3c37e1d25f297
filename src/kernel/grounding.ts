/**
 * The grounding check (docs/grounding.md: citation formats, statuses, why in the kernel): every line
 * citation in a job's outputs and summary (`path:line`, `path:start-end` in text; objects with `path`,
 * `line`, `endLine` in JSON) is compared with the lines the job was shown (`source.read` events):
 * `grounded`, `ungrounded` (a readable file, some cited line never shown) or `unknown` (no readable
 * file). Cited paths resolve with the job's own confinement, never probed on the host.
 */
import { Effect } from "effect"
import type { GroundingCitation, GroundingStatus } from "../contract/JobEvent.ts"
import type { ShownRange } from "../job/JobEvents.ts"
import { Workspace } from "../job/Workspace.ts"
import { inspectOutput } from "./outputContract.ts"

/** A citation found in a text or JSON output, before it is checked. */
export interface FoundCitation {
  readonly path: string
  readonly firstLine: number
  readonly lastLine: number
  /** The output file (relative to outDir), or null for the job summary. */
  readonly file: string | null
  /** The 1-based line of the output where the citation is written. */
  readonly at: number
}

/** Citations kept in the event; the counts always cover all of them. */
const MAX_LISTED_CITATIONS = 200
/** Output files larger than this are not scanned. */
const MAX_OUTPUT_BYTES = 2 * 1024 * 1024
/** A citation spanning more lines than this is not a citation of lines (a year range, say). */
const MAX_SPAN = 100_000

// A path (letters, digits, `_ . - /`, at least one `/` or a `.ext`), `:`, a line, optionally `-end`.
const TEXT_CITATION = /(?<![\w./@:-])((?:\.\/)?[\w.-]+(?:\/[\w.-]+)*):(\d{1,7})(?:-(\d{1,7}))?(?![\w:])/g
const hasExtensionOrDir = (path: string) => path.includes("/") || /\.[A-Za-z][\w]*$/.test(path)

const normalize = (path: string) => path.replace(/^(\.\/)+/, "")

const citation = (path: string, first: number, last: number, file: string | null, at: number): FoundCitation | undefined =>
  first >= 1 && last >= first && last - first <= MAX_SPAN
    ? { path: normalize(path), firstLine: first, lastLine: last, file, at }
    : undefined

/** The `path:line` / `path:start-end` citations of a text, with the line of the text each is on. */
export const textCitations = (text: string, file: string | null): Array<FoundCitation> => {
  const found: Array<FoundCitation> = []
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(TEXT_CITATION)) {
      const path = m[1] ?? ""
      if (!hasExtensionOrDir(path) || /^\d+(\.\d+)*$/.test(path)) continue
      const first = Number(m[2])
      const c = citation(path, first, m[3] === undefined ? first : Number(m[3]), file, i + 1)
      if (c !== undefined) found.push(c)
    }
  })
  return found
}

/** The `{ path, line, endLine? }` citations of a JSON document, each located at the line where its path is written. */
export const jsonCitations = (text: string, file: string): Array<FoundCitation> | undefined => {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch {
    return undefined
  }
  const found: Array<FoundCitation> = []
  const lines = text.split("\n")
  let cursor = 0
  const locate = (path: string): number => {
    // Objects are walked in document order, so the next line naming this path is where it is written.
    const needle = JSON.stringify(path)
    for (let i = cursor; i < lines.length; i++) {
      if (lines[i]?.includes(needle)) {
        cursor = i
        return i + 1
      }
    }
    return cursor + 1
  }
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk)
    if (v === null || typeof v !== "object") return
    const o = v as Record<string, unknown>
    const path = o["path"]
    const line = o["line"]
    if (typeof path === "string" && path !== "" && typeof line === "number" && Number.isInteger(line) && line >= 1) {
      const end = o["endLine"]
      const last = typeof end === "number" && Number.isInteger(end) && end >= line ? end : line
      const c = citation(path, line, last, file, locate(path))
      if (c !== undefined) found.push(c)
    }
    for (const value of Object.values(o)) walk(value)
  }
  walk(doc)
  return found
}

/** Whether every line of first..last lies in the union of the ranges shown of that path. */
export const isShown = (ranges: ReadonlyArray<ShownRange>, first: number, last: number): boolean => {
  const sorted = [...ranges].sort((a, b) => a.firstLine - b.firstLine)
  let next = first
  for (const r of sorted) {
    if (r.firstLine > next) break
    if (r.lastLine === null) return true
    if (r.lastLine >= next) next = r.lastLine + 1
    if (next > last) return true
  }
  return next > last
}

export interface GroundingResult {
  readonly grounded: number
  readonly ungrounded: number
  readonly unknown: number
  /** Ungrounded and unknown citations first, at most MAX_LISTED_CITATIONS. */
  readonly citations: ReadonlyArray<GroundingCitation>
}

/**
 * Classifies citations against the shown ranges; `lineCount` gives a path's number of lines when it is
 * a readable workspace file (undefined otherwise). A line past the end of the file was never shown
 * either (a whole-file read is open-ended), so it is ungrounded.
 */
const classify = (
  found: ReadonlyArray<FoundCitation>,
  shown: ReadonlyArray<ShownRange>,
  lineCount: (path: string) => Effect.Effect<number | undefined>
): Effect.Effect<GroundingResult> =>
  Effect.gen(function* () {
    const byPath = new Map<string, Array<ShownRange>>()
    for (const r of shown) {
      const key = normalize(r.path)
      byPath.set(key, [...(byPath.get(key) ?? []), r])
    }
    const counted = new Map<string, number | undefined>()
    const all: Array<GroundingCitation> = []
    for (const c of found) {
      const ranges = byPath.get(c.path)
      if (!counted.has(c.path)) counted.set(c.path, yield* lineCount(c.path))
      const lines = counted.get(c.path)
      const status: GroundingStatus =
        lines === undefined
          ? "unknown"
          : c.lastLine <= lines && ranges !== undefined && isShown(ranges, c.firstLine, c.lastLine)
            ? "grounded"
            : "ungrounded"
      all.push({ status, path: c.path, firstLine: c.firstLine, lastLine: c.lastLine, file: c.file, at: c.at })
    }
    const count = (s: GroundingStatus) => all.filter((c) => c.status === s).length
    const rank = (s: GroundingStatus) => (s === "ungrounded" ? 0 : s === "unknown" ? 1 : 2)
    return {
      grounded: count("grounded"),
      ungrounded: count("ungrounded"),
      unknown: count("unknown"),
      citations: [...all].sort((a, b) => rank(a.status) - rank(b.status)).slice(0, MAX_LISTED_CITATIONS)
    }
  })

/**
 * An output file's text, or undefined when it is not a regular file with one link inside outDir (the
 * job's shell may have swapped it for a link, a FIFO, a hard link to a host file or a huge file after
 * writing it: none of those is read), or holds a NUL.
 */
const readOutput = (path: string, outDir: string): Promise<string | undefined> =>
  inspectOutput(path, outDir, MAX_OUTPUT_BYTES).then(
    (state) => (state.kind === "text" && !state.text.includes("\0") ? state.text : undefined),
    () => undefined
  )

/** The citations of the job's output files (paths relative to outDir, from `output` events) and its summary. */
const findCitations = (outputs: ReadonlyArray<string>, summary: string): Effect.Effect<Array<FoundCitation>, never, Workspace> =>
  Effect.gen(function* () {
    const ws = yield* Workspace
    const found: Array<FoundCitation> = []
    for (const file of [...new Set(outputs)]) {
      const target = yield* Effect.option(ws.resolveWrite(file))
      if (target._tag === "None") continue
      const text = yield* Effect.promise(() => readOutput(target.value.path, ws.paths.outDir))
      if (text === undefined) continue
      const fromJson = file.toLowerCase().endsWith(".json") ? jsonCitations(text, file) : undefined
      found.push(...(fromJson ?? textCitations(text, file)))
    }
    found.push(...textCitations(summary, null))
    return found
  })

/** Largest cited file whose lines are counted; a bigger one counts as unknown. */
const MAX_CITED_BYTES = 32 * 1024 * 1024

/**
 * The number of lines of a cited path when it is a file the job could read (the read tool's
 * confinement and checked descriptor: nothing outside the read-only entries is probed), else undefined.
 */
const citedLineCount = (path: string): Effect.Effect<number | undefined, never, Workspace> =>
  Effect.flatMap(Workspace, (ws) =>
    ws.resolveRead(path).pipe(
      Effect.flatMap((target) => ws.readFile(target, MAX_CITED_BYTES)),
      Effect.map((bytes) => {
        if (bytes.length === 0) return 0
        let n = 0
        for (const b of bytes) if (b === 10) n++
        return bytes[bytes.length - 1] === 10 ? n : n + 1
      }),
      Effect.orElseSucceed(() => undefined)
    )
  )

/** The whole check of a finished job. */
export const checkGrounding = (
  outputs: ReadonlyArray<string>,
  summary: string,
  shown: ReadonlyArray<ShownRange>
): Effect.Effect<GroundingResult, never, Workspace> =>
  Effect.gen(function* () {
    const ws = yield* Workspace
    const found = yield* findCitations(outputs, summary)
    return yield* classify(found, shown, (p) => Effect.provideService(citedLineCount(p), Workspace, ws))
  })

/** The failure message of a `grounding: required` job: every listed ungrounded citation, where it is written. */
export const groundingFailure = (r: GroundingResult): string => {
  const bad = r.citations.filter((c) => c.status === "ungrounded")
  const line = (c: GroundingCitation) =>
    `${c.path}:${c.firstLine}${c.lastLine === c.firstLine ? "" : `-${c.lastLine}`} (in ${c.file ?? "the summary"} line ${c.at})`
  return `grounding required: ${r.ungrounded} citation(s) name lines never shown to the model: ${bad.map(line).join("; ")}`
}
