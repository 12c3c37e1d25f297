/**
 * How tests wait: on an event, on TestClock, or through test/support/waitFor.ts (`until`, `within`).
 * No test file sleeps on the wall clock (`Bun.sleep(`, a bare `setTimeout(resolve`) hoping time passed.
 */
import { expect, test } from "bun:test"
import { Glob } from "bun"
import path from "node:path"

const TEST_ROOT = path.join(import.meta.dir, "..")
const HELPER = "support/waitFor.ts"
const SLEEPS: ReadonlyArray<{ readonly name: string; readonly pattern: RegExp }> = [
  { name: "Bun.sleep(", pattern: /\bBun\.sleep\(/ },
  { name: "setTimeout(resolve", pattern: /\bsetTimeout\(\s*(resolve|res|r|done)\b/ }
]

test("no test file sleeps on the wall clock outside the one wait helper", async () => {
  const found: Array<string> = []
  let scanned = 0
  for await (const file of new Glob("**/*.{ts,tsx,js,mjs}").scan({ cwd: TEST_ROOT })) {
    if (file === HELPER || file.startsWith("architecture/testWaits")) continue
    scanned++
    const lines = (await Bun.file(path.join(TEST_ROOT, file)).text()).split("\n")
    lines.forEach((line, i) => {
      for (const sleep of SLEEPS) if (sleep.pattern.test(line)) found.push(`test/${file}:${i + 1}: ${sleep.name}`)
    })
  }
  expect(scanned).toBeGreaterThan(100)
  expect(found).toEqual([])
})
