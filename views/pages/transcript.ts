/**
 * A job's transcript, turn by turn: what each model call added to the conversation (the task, tool
 * results, compaction's summary pair), what compaction replaced, and the model's answer with its tool
 * calls and their inputs. A panel (loaded into the job page beside the timeline) and a page of its own.
 */
import { applyTurn, type TranscriptMessage, type TranscriptTurn } from "../../src/job/Transcript.ts"
import { emptyState, jobHref, pageHeader, time } from "../components.ts"
import { html, type Html } from "../html.ts"
import { layout, type PageContext } from "../layout.ts"

interface TranscriptTurnView {
  readonly createdAt: Date
  readonly record: TranscriptTurn
}

export interface TranscriptProps {
  readonly jobId: string
  readonly turns: ReadonlyArray<TranscriptTurnView>
}

/** The panel's element id (the job page's placeholder has it too, so an htmx swap replaces it in place). */
const TRANSCRIPT_PANEL_ID = "transcript"

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v)
const str = (v: unknown): string => (typeof v === "string" ? v : "")

/** A message's content blocks (a plain string is one text block). */
const blocks = (m: TranscriptMessage): ReadonlyArray<Readonly<Record<string, unknown>>> => {
  const content = m["content"]
  if (typeof content === "string") return [{ type: "text", text: content }]
  return Array.isArray(content) ? content.filter(isRecord) : []
}

const pretty = (v: unknown): string => JSON.stringify(v, null, 2) ?? ""

const block = (b: Readonly<Record<string, unknown>>): Html => {
  switch (b["type"]) {
    case "text":
      return html`<pre class="transcript-text">${str(b["text"])}</pre>`
    case "thinking":
      return html`<details><summary>Thinking</summary><pre class="transcript-text">${str(b["thinking"])}</pre></details>`
    case "toolCall":
      return html`<div class="transcript-call"><p><strong>Tool call</strong> <code>${str(b["name"])}</code>
        <span class="muted">${str(b["id"])}</span></p><pre class="transcript-text">${pretty(b["arguments"])}</pre></div>`
    case "image":
      return html`<p class="muted">[an image, ${str(b["mimeType"])}]</p>`
    default:
      return html`<p class="muted">[a ${str(b["type"])} block]</p>`
  }
}

const ROLE_LABELS: Readonly<Record<TranscriptMessage["role"], string>> = {
  user: "User",
  assistant: "Model",
  toolResult: "Tool result"
}

const message = (m: TranscriptMessage): Html => {
  const title =
    m.role === "toolResult"
      ? html`${ROLE_LABELS[m.role]} <code>${str(m["toolName"])}</code> <span class="muted">${str(m["toolCallId"])}</span>${
          m["isError"] === true ? html` <span class="badge badge-error">error</span>` : html``
        }`
      : html`${ROLE_LABELS[m.role]}`
  return html`<li class="transcript-message transcript-${m.role}"><p class="transcript-role">${title}</p>${blocks(m).map(block)}</li>`
}

/** One turn; `replaced` are the messages compaction took out of the conversation before it. */
const turnView = (view: TranscriptTurnView, replaced: ReadonlyArray<TranscriptMessage>): Html => {
  const { record } = view
  const compaction = record.compaction
  return html`<article class="card transcript-turn" id="turn-${String(record.turn)}">
    <h3>Turn ${String(record.turn)} <span class="muted">${time(view.createdAt)}</span></h3>
    ${
      compaction === undefined
        ? html``
        : html`<div class="transcript-compaction">
      <p><strong>Compaction</strong>: kept the first ${String(compaction.kept)} messages, replaced ${String(compaction.replaced)}.</p>
      ${compaction.summaries.map((s) => html`<details><summary>Summary</summary><pre class="transcript-text">${s}</pre></details>`)}
      ${
        replaced.length === 0
          ? html``
          : html`<details><summary>What it replaced (${String(replaced.length)} messages)</summary><ol class="transcript-messages">${replaced.map(message)}</ol></details>`
      }
    </div>`
    }
    <ol class="transcript-messages">${record.messages.map(message)}${
      record.answer === undefined
        ? html`<li class="muted">No answer was recorded: the job stopped during this call.</li>`
        : message(record.answer)
    }</ol>
    <p class="muted">Instructions <code>${record.instructionsHash.slice(0, 12)}</code> · tools <code>${record.toolsHash.slice(0, 12)}</code></p>
  </article>`
}

/** The turns, each with what compaction replaced before it (the conversation replayed from the turns). */
const turnsView = (turns: ReadonlyArray<TranscriptTurnView>): ReadonlyArray<Html> => {
  let conversation: ReadonlyArray<TranscriptMessage> = []
  return turns.map((t) => {
    const kept = t.record.compaction?.kept ?? conversation.length
    const replaced = conversation.slice(kept)
    conversation = applyTurn(conversation, t.record)
    return turnView(t, replaced)
  })
}

/** The panel: every turn, or a note that the job kept none. */
export const transcriptPanel = (props: TranscriptProps): Html => html`
  <section id="${TRANSCRIPT_PANEL_ID}" class="stack transcript" aria-labelledby="transcript-title">
    <h2 id="transcript-title">Transcript</h2>
    ${
      props.turns.length === 0
        ? emptyState("No transcript.", "Only jobs of a project that keeps transcripts have one, and only until its retention ends.")
        : turnsView(props.turns)
    }
  </section>`

/** The job page's placeholder for a viewer without transcripts.read: nothing to show. */
export const noTranscriptPanel = (): Html => html`<section id="${TRANSCRIPT_PANEL_ID}" hidden></section>`

export const transcriptPage = (ctx: PageContext, props: TranscriptProps): Html =>
  layout(
    ctx,
    "Transcript",
    html`
  ${pageHeader("Transcript", {
    crumbs: [
      ["/jobs", "Jobs"],
      [jobHref(props.jobId), `Job ${props.jobId.slice(0, 8)}`]
    ]
  })}
  ${transcriptPanel(props)}`
  )
