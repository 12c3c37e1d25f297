import { describe, expect, setDefaultTimeout, test } from "bun:test"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { EventSink } from "../../src/job/EventSink.ts"
import { Redactor } from "../../src/job/Redactor.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const SECRET = "sk-live-abcdef0123456789"

describe("Redactor", () => {
  test("replaces a secret whole, base64- and URL-encoded", () => {
    const r = new Redactor([SECRET, "p@ss word/with=chars"])
    expect(r.redact(`k=${SECRET}`)).toBe("k=[redacted]")
    expect(r.redact(Buffer.from(SECRET).toString("base64"))).not.toContain(Buffer.from(SECRET).toString("base64").slice(0, 20))
    expect(r.redact(encodeURIComponent("p@ss word/with=chars"))).toBe("[redacted]")
    expect(r.redactValue({ input: { command: `curl -H "x: ${SECRET}"` } })).toEqual({ input: { command: 'curl -H "x: [redacted]"' } })
  })

  test("short values are not treated as secrets", () => {
    expect(new Redactor(["abc"]).redact("abcabc")).toBe("abcabc")
  })
})

describe("EventSink", () => {
  const collect = () => {
    const events: Array<JobEvent> = []
    const sink = new EventSink(
      new Redactor([SECRET]),
      (e) => events.push(e),
      () => new Date(0)
    )
    return { events, sink }
  }

  test("a secret split across streamed chunks never appears, and no text is lost", () => {
    const { events, sink } = collect()
    const text = `before ${SECRET} after`
    for (let i = 0; i < text.length; i += 3) sink.emit({ type: "message.delta", text: text.slice(i, i + 3) })
    sink.flushText()
    const joined = events.map((e) => (e.type === "message.delta" ? e.text : "")).join("")
    expect(joined).toBe("before [redacted] after")
    for (const e of events) expect(JSON.stringify(e)).not.toContain(SECRET.slice(0, 12))
  })

  test("stamps seq from 0 and closes after the terminal event", () => {
    const { events, sink } = collect()
    sink.emit({ type: "output", path: "a" })
    sink.emit({ type: "job.completed", summary: "s" })
    sink.emit({ type: "output", path: "late" })
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [0, "output"],
      [1, "job.completed"]
    ])
  })

  test("held-back text is flushed before the next non-delta event, keeping order", () => {
    const { events, sink } = collect()
    sink.emit({ type: "message.delta", text: "see sk-li" })
    sink.emit({ type: "output", path: "x" })
    expect(events.map((e) => e.type)).toEqual(["message.delta", "message.delta", "output"])
    expect(events.map((e) => (e.type === "message.delta" ? e.text : "")).join("")).toBe("see sk-li")
  })
})
