/**
 * The model's side of an exported job: recorded turns become scripted steps (compaction summaries
 * first, tool-call ids and usage kept); a transcript with a missing turn or an unanswered one is
 * refused; the job's events become what the replay must reproduce.
 */
import { expect, test } from "bun:test"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import type { TranscriptTurn } from "../../src/job/Transcript.ts"
import { expectedOf, scriptOf, TurnNotReplayable } from "../../src/testing/recordedJob.ts"

const HASH = "a".repeat(64)
const answer = (content: ReadonlyArray<Record<string, unknown>>, stopReason = "stop") => ({
  role: "assistant" as const,
  content,
  usage: { input: 120, output: 7, cacheRead: 30, cacheWrite: 0, totalTokens: 157 },
  stopReason
})
const turn = (n: number, rest: Partial<TranscriptTurn> = {}): TranscriptTurn => ({
  turn: n,
  instructionsHash: HASH,
  toolsHash: HASH,
  messages: [{ role: "user", content: "task" }],
  answer: answer([{ type: "text", text: "Done." }]),
  ...rest
})

test("each answer becomes one turn step; a compacted turn's summaries come first", () => {
  const steps = scriptOf([
    turn(1, {
      answer: answer(
        [
          { type: "thinking", thinking: "Look first." },
          { type: "text", text: "Reading." },
          { type: "toolCall", id: "call_1", name: "read", arguments: { path: "src/a.ts" } }
        ],
        "toolUse"
      )
    }),
    turn(2, { compaction: { kept: 1, replaced: 2, summaries: ["S1", "S2"] } })
  ])
  expect(steps).toEqual([
    {
      kind: "turn",
      text: "Reading.",
      thinking: "Look first.",
      toolCalls: [{ id: "call_1", name: "read", arguments: { path: "src/a.ts" } }],
      usage: { input: 120, output: 7, cacheRead: 30, cacheWrite: 0 }
    },
    { kind: "turn", text: "S1" },
    { kind: "turn", text: "S2" },
    { kind: "turn", text: "Done.", usage: { input: 120, output: 7, cacheRead: 30, cacheWrite: 0 } }
  ])
})

test("a transcript missing a turn, or a turn without its answer, is not replayable", () => {
  expect(() => scriptOf([turn(1), turn(3)])).toThrow(new TurnNotReplayable(2, "the transcript does not hold it"))
  const { answer: _gone, ...unanswered } = turn(2)
  // A turn stored before its model call returned: the record has no answer.
  const stored = unanswered as unknown as TranscriptTurn
  expect(() => scriptOf([turn(1), stored])).toThrow("turn 2 cannot be replayed: the model's answer was not recorded")
  expect(() => scriptOf([turn(1, { answer: { role: "assistant", content: "not blocks" } })])).toThrow(
    "turn 1 cannot be replayed: its answer is not an assistant message"
  )
})

test("the events give the tool calls, outputs, summary and answer to reproduce; a job without job.completed gives none", () => {
  const at = "2026-12-07T00:00:00.000Z"
  const events: ReadonlyArray<JobEvent> = [
    { type: "tool.call", seq: 0, at, callId: "c1", tool: "read", input: { path: "src/a.ts" }, allowed: true },
    { type: "tool.call", seq: 1, at, callId: "c2", tool: "shell", input: { command: "curl x" }, allowed: false, reason: "denied" },
    { type: "output", seq: 2, at, path: "report.md" },
    { type: "job.completed", seq: 3, at, summary: "Done.", answer: { ok: true } }
  ]
  expect(expectedOf(events)).toEqual({
    toolCalls: [
      { tool: "read", input: { path: "src/a.ts" }, allowed: true },
      { tool: "shell", input: { command: "curl x" }, allowed: false }
    ],
    outputs: ["report.md"],
    summary: "Done.",
    answer: { ok: true }
  })
  expect(expectedOf(events.slice(0, 3))).toBeUndefined()
})
