/** The eval files of a package (docs/evals.md): parsed with the package, every problem at once, round-tripped. */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { parseAgentPackage } from "../../src/agents/AgentPackage.ts"
import { parseEvals } from "../../src/agents/evalSpec.ts"
import { serializeAgentPackage } from "../../src/agents/serializePackage.ts"
import { toAgentDefinition } from "../../src/agents/validateAgent.ts"
import { readZip } from "../../src/agents/zip.ts"
import { writeZip } from "../../src/agents/zip.ts"
import { Effect } from "effect"
import { filesOfForm, formFromPackage } from "../../views/forms/agentForm.ts"

const agent = (extra = "") => ({ path: "shop-bot.md", content: `---\nname: shop-bot\nversion: 1\ndescription: d\n${extra}---\nDo it.\n` })
const evalFile = (name: string, fm: string, body = "Find the orders.\n") => ({
  path: `evals/${name}.md`,
  content: `---\n${fm}---\n${body}`
})
const GOOD = `description: Finds the order repository.
fixture: shop
expect:
  files: [report.md]
  grounding: clean
  contains:
    - { file: report.md, text: "src/orders.ts" }
    - { text: orders }
  not-contains:
    - { text: TODO }
  max-cost-usd: 0.05
  max-turns: 20
`
const fixture = [
  { path: "evals/fixtures/shop/src/orders.ts", content: "export const orders = []\n" },
  { path: "evals/fixtures/shop/README.md", content: "# Shop\n" }
]

describe("evals in a package", () => {
  test("a package with evals and gate: evals parses; evals never reach the job definition; serialize and ZIP round-trip", async () => {
    const parsed = parseAgentPackage([agent("gate: evals\n"), evalFile("find-orders", GOOD), ...fixture])
    if (Either.isLeft(parsed)) throw new Error(JSON.stringify(parsed.left))
    expect(parsed.right.gate).toBe("evals")
    expect(parsed.right.evals?.map((f) => f.path)).toEqual([
      "evals/find-orders.md",
      "evals/fixtures/shop/README.md",
      "evals/fixtures/shop/src/orders.ts"
    ])
    const spec = parseEvals(parsed.right.evals ?? [])
    expect(spec.problems).toEqual([])
    expect(spec.evals).toEqual([
      {
        name: "find-orders",
        description: "Finds the order repository.",
        fixture: "shop",
        task: "Find the orders.\n",
        expect: {
          files: ["report.md"],
          grounding: "clean",
          contains: [{ file: "report.md", text: "src/orders.ts" }, { text: "orders" }],
          "not-contains": [{ text: "TODO" }],
          "max-cost-usd": 0.05,
          "max-turns": 20
        }
      }
    ])
    expect(
      spec.fixtures
        .get("shop")
        ?.files.map((f) => f.path)
        .sort()
    ).toEqual(["README.md", "src/orders.ts"])
    const definition = JSON.stringify(toAgentDefinition(parsed.right, { version: 1, sharedSkills: new Map() }))
    expect(definition).not.toContain("Finds the order repository")
    expect(definition).not.toContain("export const orders")
    const files = serializeAgentPackage(parsed.right)
    expect(parseAgentPackage(files)).toEqual(parsed)
    const unzipped = await Effect.runPromise(readZip(writeZip(files)))
    expect(parseAgentPackage(unzipped)).toEqual(parsed)
  })

  test("every problem at once: unknown key, missing fixture, bad name, bad file, empty task, stray file, bad gate", () => {
    const parsed = parseAgentPackage([
      agent("gate: sometimes\n"),
      evalFile(
        "find-orders",
        `description: d\nfixture: nowhere\nexpect:\n  contains:\n    - { file: "../x", text: a }\n  colour: red\n`,
        "  \n"
      ),
      evalFile("Bad_Name", GOOD),
      { path: "evals/notes.txt", content: "x" },
      ...fixture
    ])
    const found = Either.isLeft(parsed) ? parsed.left.map((p) => `${p.path}: ${p.message}`) : []
    expect(found).toContain("shop-bot.md#gate: must be evals (or left out)")
    expect(found).toContain("evals/find-orders.md#fixture: no folder evals/fixtures/nowhere/ with files in the package")
    expect(found).toContain("evals/find-orders.md#expect.contains.0.file: must be a relative path inside the output directory")
    expect(found.some((p) => p.startsWith("evals/find-orders.md#expect.colour"))).toBe(true)
    expect(found).toContain("evals/find-orders.md#body: the task (the text after the front matter) must not be empty")
    expect(found.some((p) => p.startsWith("evals/Bad_Name.md: eval name"))).toBe(true)
    expect(found.some((p) => p.startsWith("evals/notes.txt: not an eval file"))).toBe(true)
  })

  test("the portal editor's form keeps eval files and fixtures through a save", () => {
    const parsed = parseAgentPackage([agent(), evalFile("find-orders", GOOD), ...fixture])
    if (Either.isLeft(parsed)) throw new Error(JSON.stringify(parsed.left))
    const files = filesOfForm(formFromPackage(parsed.right, { kernelTools: ["read", "write"], mcpGrants: [] }))
    if (Either.isLeft(files)) throw new Error(JSON.stringify(files.left))
    const again = parseAgentPackage(files.right)
    expect(Either.isRight(again) ? again.right.evals : undefined).toEqual(parsed.right.evals)
  })

  test("fixture file names that would leave the fixture folder are refused with the package's path rules", () => {
    const parsed = parseAgentPackage([
      agent(),
      evalFile("find-orders", GOOD),
      ...fixture,
      { path: "evals/fixtures/shop/../../../../etc/cron.d/x", content: "x" },
      { path: "/evals/fixtures/shop/abs.ts", content: "x" },
      { path: "evals/fixtures/shop\\win.ts", content: "x" }
    ])
    const found = Either.isLeft(parsed) ? parsed.left.map((p) => `${p.path}: ${p.message}`) : []
    expect(found).toContain("evals/fixtures/shop/../../../../etc/cron.d/x: `..` segments are not allowed")
    expect(found).toContain("/evals/fixtures/shop/abs.ts: absolute paths are not allowed")
    expect(found.some((p) => p.includes("win.ts: file name contains a backslash"))).toBe(true)
  })

  test("an eval without checks is a problem; a package without evals has no evals key", () => {
    const parsed = parseAgentPackage([agent(), evalFile("e", "description: d\nfixture: shop\nexpect: {}\n"), ...fixture])
    expect(Either.isLeft(parsed) ? parsed.left : []).toContainEqual({
      path: "evals/e.md#expect",
      message: "needs at least one check (files, schema, grounding, contains, not-contains, max-cost-usd, max-turns)"
    })
    const plain = parseAgentPackage([agent()])
    expect(Either.isRight(plain) && !("evals" in plain.right)).toBe(true)
  })
})
