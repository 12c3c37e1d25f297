/**
 * Stamps, redacts and delivers a job's events in order. `seq` counts from 0 per job (a resumed run
 * goes on from the last stored one); `at` is ISO
 * time. Message deltas pass through a hold-back buffer so a secret split across chunks is redacted.
 * Once the terminal event is out, the sink is closed: nothing can follow it.
 */
import type { JobEvent, JobEventBody } from "../contract/JobEvent.ts"
import type { Redactor } from "./Redactor.ts"

export class EventSink {
  private seq: number
  private pendingText = ""
  private closed = false

  /** `firstSeq`: the seq of the first event (a resumed job's run goes on from the events stored before it). */
  constructor(
    private readonly redactor: Redactor,
    private readonly deliver: (event: JobEvent) => void,
    private readonly now: () => Date = () => new Date(),
    firstSeq = 0
  ) {
    this.seq = firstSeq
  }

  /** Emits one event (flushing held-back text first, so order is kept). No-op after the terminal event. */
  emit(body: JobEventBody): void {
    if (this.closed) return
    if (body.type !== "message.delta") this.flushText()
    if (body.type === "message.delta") return this.text(body.text)
    this.push(this.redactor.redactValue(body))
    if (body.type === "job.completed" || body.type === "job.failed") this.closed = true
  }

  /** Ends a streamed message: whatever text was held back goes out now. */
  flushText(): void {
    if (this.pendingText === "") return
    const text = this.redactor.redact(this.pendingText)
    this.pendingText = ""
    this.push({ type: "message.delta", text })
  }

  get isClosed(): boolean {
    return this.closed
  }

  private text(chunk: string): void {
    if (this.redactor.empty) return this.push({ type: "message.delta", text: chunk })
    const text = this.redactor.redact(this.pendingText + chunk)
    const keep = this.redactor.heldBack(text)
    this.pendingText = text.slice(text.length - keep)
    const out = text.slice(0, text.length - keep)
    if (out !== "") this.push({ type: "message.delta", text: out })
  }

  private push(body: JobEventBody): void {
    this.deliver({ ...body, seq: this.seq++, at: this.now().toISOString() } as JobEvent)
  }
}
