/**
 * The summariser's side of compaction: its fixed instruction and the transcript of the turns to
 * summarise, rendered as plain text (no tool definitions needed) and cut to fit the model's window.
 */
import type { Message } from "@earendil-works/pi-ai"

/** The summary request's system prompt; fixed, so summary prefixes are cacheable too. */
export const SUMMARISER_INSTRUCTION = [
  "You compact the history of an autonomous agent's job so that it can continue within its context window.",
  "You get the task, possibly an earlier summary, and a transcript of the turns to compact.",
  "Write the summary the agent will read in their place: what it has done, what it found (files, line numbers,",
  "names, facts, decisions) and what is still open. Keep exact paths, identifiers and numbers. Invent nothing.",
  "Never repeat keys, tokens, passwords or other secrets. Answer with the summary only."
].join("\n")

/** Per-entry caps (characters): a transcript keeps many short entries rather than a few whole files. */
const CAP = { user: 4000, assistant: 4000, toolCall: 1000, toolResult: 2000, earlierSummary: 8000 } as const
/** The transcript's share of what the summary request may use: chars / 4 undercounts code tokens. */
const MARGIN = 0.7

const cap = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}\n[… ${text.length - max} more characters]`

const textOf = (content: string | ReadonlyArray<{ readonly type: string }>): string =>
  typeof content === "string"
    ? content
    : content.map((b) => ("text" in b && typeof b.text === "string" ? b.text : b.type === "image" ? "[image]" : "")).join("")

/** One transcript entry per text block, tool call and tool result; thinking is left out. */
const entries = (m: Message): Array<string> => {
  switch (m.role) {
    case "assistant":
      return m.content.flatMap((b) =>
        b.type === "text"
          ? [`Assistant: ${cap(b.text, CAP.assistant)}`]
          : b.type === "toolCall"
            ? [`Tool call ${b.name}: ${cap(JSON.stringify(b.arguments), CAP.toolCall)}`]
            : []
      )
    case "toolResult":
      return [`Result of ${m.toolName}${m.isError ? " (error)" : ""}: ${cap(textOf(m.content), CAP.toolResult)}`]
    case "user":
      return [`User: ${cap(textOf(m.content), CAP.user)}`]
    case "system":
      return []
  }
}

/**
 * The summary request's one user message: the task, the earlier summary (when the head holds one) and
 * the old turns [oldFrom, keepFrom), newest entries first to survive when it must be cut to `budgetTokens`.
 */
export const renderTranscript = (
  messages: ReadonlyArray<Message>,
  headLength: number,
  range: { readonly oldFrom: number; readonly keepFrom: number },
  budgetTokens: number
): string => {
  const task = messages[0] === undefined ? "" : cap(textOf(messages[0].content), CAP.user)
  const earlier = headLength > 1 && messages[1] !== undefined ? cap(textOf(messages[1].content), CAP.earlierSummary) : undefined
  const head = [`<task>\n${task}\n</task>`, ...(earlier === undefined ? [] : [`<earlier-summary>\n${earlier}\n</earlier-summary>`])].join(
    "\n\n"
  )
  const tail = "Summarise the transcript above (and the earlier summary, if any) as your instructions say."
  let room = Math.floor(budgetTokens * MARGIN) * 4 - head.length - tail.length - SUMMARISER_INSTRUCTION.length - 64
  const kept: Array<string> = []
  const all = messages.slice(range.oldFrom, range.keepFrom).flatMap(entries)
  for (let i = all.length - 1; i >= 0; i--) {
    const entry = all[i]!
    if (entry.length + 2 > room) {
      kept.push(`[… ${i + 1} earlier entries omitted …]`)
      break
    }
    room -= entry.length + 2
    kept.push(entry)
  }
  return `${head}\n\n<transcript>\n${kept.reverse().join("\n\n")}\n</transcript>\n\n${tail}`
}
