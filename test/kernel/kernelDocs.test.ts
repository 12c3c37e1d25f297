/**
 * docs/kernel.md against the code: the memory and web tools it describes are the service tools this
 * runtime creates, and it does not call them missing or refused.
 */
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { SERVICE_TOOLS } from "../../src/contract/AgentDefinition.ts"
import { SERVICE_TOOL_DEFS } from "../../src/tools/services/serviceTools.ts"

const docs = readFileSync(join(import.meta.dir, "..", "..", "docs", "kernel.md"), "utf8")

test("docs/kernel.md names every memory and web tool the runtime creates", () => {
  expect(SERVICE_TOOL_DEFS.map((d) => d.name)).toEqual([...SERVICE_TOOLS])
  expect(SERVICE_TOOLS.filter((name) => !docs.includes(`\`${name}\``))).toEqual([])
})

test("docs/kernel.md does not say the memory and web tools are missing or refused", () => {
  const claims = [/none exist in this\s+version/, /memory and web tools are refused/, /not available yet/]
  expect(claims.flatMap((c) => c.exec(docs) ?? [])).toEqual([])
})
