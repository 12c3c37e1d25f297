/**
 * An eval's `expect` against what its job left (docs/evals.md): the settled job row (status, cost,
 * turns, grounding counts), its summary, its `grounding` event and its output files, read from the
 * eval's own output directory without following a link. Every problem, one sentence each.
 */
import { join } from "node:path"
import type { EvalExpect, Needle } from "../../agents/evalSpec.ts"
import type { JobEvent } from "../../contract/JobEvent.ts"
import { inspectOutput } from "../../kernel/outputContract.ts"
import type { JobRow } from "../JobStore.ts"

type GroundingEvent = Extract<JobEvent, { type: "grounding" }>

/** What the check reads of a finished eval job. */
export interface EvalEvidence {
  readonly job: JobRow
  /** Output paths the job wrote (its `output` events), relative to outDir. */
  readonly outputs: ReadonlyArray<string>
  readonly grounding: GroundingEvent | undefined
  readonly outDir: string
}

/** Citations named in a problem; the counts always cover all of them. */
const MAX_NAMED = 5
const usd = (n: number) => `$${n.toFixed(4)}`
const quoted = (s: string) => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s)

const readOutput = async (outDir: string, file: string): Promise<{ text: string } | { problem: string }> => {
  const state = await inspectOutput(join(outDir, file), outDir).catch(() => ({ kind: "not-regular" as const }))
  switch (state.kind) {
    case "text":
      return { text: state.text }
    case "missing":
      return { problem: `${file}: missing` }
    case "empty":
      return { problem: `${file}: empty` }
    case "too-large":
      return { problem: `${file}: too large to check` }
    default:
      return { problem: `${file}: not a regular file` }
  }
}

const turnsOf = (usage: Record<string, unknown> | null): number | undefined =>
  typeof usage?.["turns"] === "number" ? usage["turns"] : undefined

/** Every expectation the job missed ([] = the eval passed). */
export const checkEval = async (expect: EvalExpect, e: EvalEvidence): Promise<Array<string>> => {
  const problems: Array<string> = []
  const { job } = e
  if (job.status !== "completed")
    problems.push(`the job ${job.status}${job.reason === null ? "" : ` (${job.reason})`}: ${job.message ?? "no message"}`)
  const texts = new Map<string, string>()
  const outputText = async (file: string) => {
    const known = texts.get(file)
    if (known !== undefined) return { text: known }
    const read = await readOutput(e.outDir, file)
    if ("text" in read) texts.set(file, read.text)
    return read
  }
  for (const file of expect.files ?? []) {
    const read = await outputText(file)
    if ("problem" in read) problems.push(read.problem)
    else if (!e.outputs.includes(file)) problems.push(`${file}: not written by the job`)
    else if (expect.schema !== false && file.toLowerCase().endsWith(".json")) {
      try {
        JSON.parse(read.text)
      } catch {
        problems.push(`${file}: not valid JSON`)
      }
    }
  }
  if (expect.grounding === "clean") {
    if (e.grounding === undefined || job.grounding === null) problems.push("grounding: not checked (the job did not finish its answer)")
    else if (e.grounding.ungrounded + e.grounding.unknown > 0) {
      const bad = e.grounding.citations.filter((c) => c.status !== "grounded").slice(0, MAX_NAMED)
      const named = bad.map((c) => `${c.path}:${c.firstLine}${c.lastLine === c.firstLine ? "" : `-${c.lastLine}`} (${c.status})`).join(", ")
      problems.push(`grounding: ${e.grounding.ungrounded} ungrounded and ${e.grounding.unknown} unknown citation(s): ${named}`)
    }
  }
  // Without `file`: the summary and every output the job wrote.
  const everywhere = async (): Promise<Array<{ where: string; text: string }>> => {
    const all: Array<{ where: string; text: string }> = [{ where: "the summary", text: job.summary ?? "" }]
    for (const file of e.outputs) {
      const read = await outputText(file)
      if ("text" in read) all.push({ where: file, text: read.text })
    }
    return all
  }
  const haystacks = async (needle: Needle): Promise<Array<{ where: string; text: string }> | string> => {
    if (needle.file === undefined) return await everywhere()
    const read = await outputText(needle.file)
    return "text" in read ? [{ where: needle.file, text: read.text }] : read.problem
  }
  for (const needle of expect.contains ?? []) {
    const hay = await haystacks(needle)
    if (typeof hay === "string") problems.push(`${hay}, so it does not contain ${quoted(needle.text)}`)
    else if (!hay.some((h) => h.text.includes(needle.text))) {
      problems.push(
        needle.file === undefined
          ? `neither the summary nor any output contains ${quoted(needle.text)}`
          : `${needle.file} does not contain ${quoted(needle.text)}`
      )
    }
  }
  for (const needle of expect["not-contains"] ?? []) {
    const read = await haystacks(needle)
    const hay = typeof read === "string" ? [] : read
    const found = hay.filter((h) => h.text.includes(needle.text)).map((h) => h.where)
    if (found.length > 0) problems.push(`${found.join(", ")} ${found.length === 1 ? "contains" : "contain"} ${quoted(needle.text)}`)
  }
  const ceiling = expect["max-cost-usd"]
  if (ceiling !== undefined && (job.costUsd ?? 0) > ceiling)
    problems.push(`cost ${usd(job.costUsd ?? 0)} is over the ceiling of ${usd(ceiling)}`)
  const maxTurns = expect["max-turns"]
  const turns = turnsOf(job.usage)
  if (maxTurns !== undefined && turns !== undefined && turns > maxTurns) problems.push(`${turns} turns, more than the ${maxTurns} allowed`)
  return problems
}
