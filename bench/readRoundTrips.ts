/** The fixture both round-trip benches share: a 200-line file and a model that reads it in `calls` turns, then answers. */
import { createJobDirs } from "../test/support/jobChild.ts"
import type { Step } from "../test/support/scriptedServers.ts"

export const FIXTURE_LINES = Array.from({ length: 200 }, (_, i) => `line ${i}: export const v${i} = ${i}`).join("\n")

export const createReadFixture = () => createJobDirs({ "a.ts": FIXTURE_LINES })

/** `calls` direct `read` tool calls on src/a.ts, one per turn, then a final answer. */
export const readRoundTrips = (calls: number): Array<Step> => [
  ...Array.from({ length: calls }, (_, i): Step => ({
    kind: "turn",
    toolCalls: [{ name: "read", arguments: { path: "src/a.ts", offset: i + 1, limit: 20 } }]
  })),
  { kind: "turn", text: "done" }
]
