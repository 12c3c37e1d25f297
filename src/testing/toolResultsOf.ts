/**
 * What a scripted model was sent back: the tool results in a recorded request, in either wire dialect,
 * so an `fn` step can answer from what the job's tools returned.
 */
import type { RecordedRequest } from "./scriptedSteps.ts"

type Json = Readonly<Record<string, unknown>>

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v)
const list = (v: unknown): ReadonlyArray<unknown> => (Array.isArray(v) ? v : [])

/** A message or block `content`: a string, or text parts joined. */
const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : list(content)
        .map((part) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : ""))
        .join("")

/**
 * The text of every tool result in the request, oldest first: OpenAI `role: "tool"` messages and
 * Anthropic `tool_result` blocks. Empty when the request has none (the job's first model call).
 */
export const toolResultsOf = (request: RecordedRequest): ReadonlyArray<string> => {
  const messages = isObject(request.body) ? list(request.body["messages"]) : []
  const results: Array<string> = []
  for (const message of messages) {
    if (!isObject(message)) continue
    if (message["role"] === "tool") results.push(textOf(message["content"]))
    for (const block of list(message["content"])) {
      if (isObject(block) && block["type"] === "tool_result") results.push(textOf(block["content"]))
    }
  }
  return results
}
