import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import { parseAgentPackage } from "../../src/agents/AgentPackage.ts"
import { MAX_FRONT_MATTER_BYTES, MAX_FRONT_MATTER_NODES, readFrontMatter, splitFrontMatter } from "../../src/agents/frontMatter.ts"
import { createPackageFiles, problemsOf, SUPPORT_BOT_MD } from "./fixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const split = (text: string) => Either.getOrThrowWith(splitFrontMatter(text), (m) => new Error(m))
const messageOf = (text: string) => {
  const r = readFrontMatter(text, "a.md")
  if (Either.isRight(r)) throw new Error("expected a problem")
  expect(r.left).toHaveLength(1)
  expect(r.left[0]?.path).toBe("a.md")
  return r.left[0]?.message ?? ""
}
const globals = globalThis as Record<string, unknown>

describe("front matter: the strict --- splitter", () => {
  test("splits at the first two --- lines and strips the closing line's break from the body", () => {
    expect(split("---\nname: x\n---\nbody\n---\nmore")).toEqual({ yaml: "name: x\n", body: "body\n---\nmore" })
    expect(split("---\nname: x\n---\n\nbody")).toEqual({ yaml: "name: x\n", body: "\nbody" })
    expect(split("---\nname: x\n---")).toEqual({ yaml: "name: x\n", body: "" })
    expect(split("---\n---\n")).toEqual({ yaml: "", body: "" })
  })

  test("CRLF delimiter lines are accepted; the body keeps its own line breaks", () => {
    expect(split("---\r\nname: x\r\n---\r\nbody\r\n")).toEqual({ yaml: "name: x\r\n", body: "body\r\n" })
  })

  test("language tags and near misses are refused with a clear message", () => {
    for (const opening of ["---js", "---javascript", "--- yaml", "---yaml", "--- ", "----", "---coffee"]) {
      const r = splitFrontMatter(`${opening}\nname: x\n---\nbody`)
      expect(Either.isLeft(r)).toBe(true)
      if (Either.isLeft(r)) {
        expect(r.left).toContain('must open with a line that is exactly "---"')
        expect(r.left).toContain("never evaluated")
      }
    }
  })

  test("no front matter, blank line first, or an unclosed block are refused", () => {
    expect(Either.isLeft(splitFrontMatter("# Just markdown\n"))).toBe(true)
    expect(Either.isLeft(splitFrontMatter("\n---\nname: x\n---\n"))).toBe(true)
    expect(Either.isLeft(splitFrontMatter(""))).toBe(true)
    const unclosed = splitFrontMatter("---\nname: x\nbody without end\n")
    expect(unclosed).toEqual(Either.left('front matter is not closed by a "---" line'))
  })

  test("front matter over 64 KiB is refused, counted in UTF-8 bytes", () => {
    const big = `---\ndescription: "${"x".repeat(MAX_FRONT_MATTER_BYTES)}"\n---\n`
    expect(splitFrontMatter(big)).toEqual(Either.left(`front matter is larger than ${MAX_FRONT_MATTER_BYTES} bytes`))
    // 40k two-byte characters: under 64 Ki characters, over 64 KiB.
    const wide = `---\ndescription: "${"é".repeat(40_000)}"\n---\n`
    expect(splitFrontMatter(wide)).toEqual(Either.left(`front matter is larger than ${MAX_FRONT_MATTER_BYTES} bytes`))
    // An unclosed huge block stops scanning at the cap instead of reading to the end.
    const unclosed = `---\n${"a: b\n".repeat(100_000)}`
    expect(splitFrontMatter(unclosed)).toEqual(Either.left(`front matter is larger than ${MAX_FRONT_MATTER_BYTES} bytes`))
  })
})

describe("front matter: ---js is refused and never run", () => {
  const payloads = [
    "---js\nglobalThis.__kintsugiFrontMatterRan = true\nmodule.exports = { name: 'support-bot' }\n---\nbody\n",
    "---javascript\n(function(){ globalThis.__kintsugiFrontMatterRan = true; return { name: 'support-bot' } })()\n---\nbody\n",
    "--- js\nglobalThis.__kintsugiFrontMatterRan = true\n---\nbody\n"
  ]

  test("readFrontMatter refuses each payload and the global stays unset", () => {
    for (const text of payloads) expect(messageOf(text)).toContain("language tags such as ---js are not supported")
    expect(globals.__kintsugiFrontMatterRan).toBeUndefined()
  })

  test("parseAgentPackage refuses them the same way, and the global stays unset", () => {
    for (const text of payloads) {
      const problems = problemsOf(parseAgentPackage(createPackageFiles({ "support-bot.md": text })))
      expect(problems).toContainEqual({
        path: "support-bot.md",
        message: expect.stringContaining("language tags such as ---js are not supported")
      })
    }
    expect(globals.__kintsugiFrontMatterRan).toBeUndefined()
  })

  test("YAML tags that other parsers turn into code stay plain strings", () => {
    const r = readFrontMatter("---\nname: !!js/function 'function () { globalThis.__kintsugiFrontMatterRan = 1 }'\n---\n", "a.md")
    expect(Either.isRight(r)).toBe(true)
    if (Either.isRight(r)) expect(typeof r.right.raw.name).toBe("string")
    expect(globals.__kintsugiFrontMatterRan).toBeUndefined()
  })
})

describe("front matter: YAML shape and caps", () => {
  test("a mapping comes back with the body; empty front matter is an empty mapping", () => {
    expect(readFrontMatter("---\nname: x\ntools: [read]\n---\nhi", "a.md")).toEqual(
      Either.right({ raw: { name: "x", tools: ["read"] }, body: "hi" })
    )
    expect(readFrontMatter("---\n# only a comment\n---\nhi", "a.md")).toEqual(Either.right({ raw: {}, body: "hi" }))
  })

  test("a list or a scalar is not a mapping", () => {
    expect(messageOf("---\n- a\n- b\n---\n")).toBe("front matter must be a mapping of keys to values, not a list")
    expect(messageOf("---\njust text\n---\n")).toBe("front matter must be a mapping of keys to values, not a string")
  })

  test("invalid YAML is a problem, not an exception", () => {
    expect(messageOf("---\nname: [unclosed\n---\n")).toStartWith("front matter is not valid YAML:")
    expect(messageOf("---\nname: *undefined-alias\n---\n")).toStartWith("front matter is not valid YAML:")
  })

  const laughs = (levels: number) => {
    const names = "abcdefghij".split("")
    const lines = [`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`]
    for (let i = 1; i < levels; i++) {
      const prev = names[i - 1]
      lines.push(`${names[i]}: &${names[i]} [${Array(9).fill(`*${prev}`).join(",")}]`)
    }
    return `---\n${lines.join("\n")}\n---\n`
  }

  test("a billion laughs is refused (Bun's alias guard or the node cap), quickly and as a problem", () => {
    // 9 levels = 9^9 ≈ 387M strings if expanded; the whole text is under 1 KiB.
    expect(laughs(9).length).toBeLessThan(1024)
    expect(messageOf(laughs(9))).toStartWith("front matter is ")
    // 5 levels (59,049 strings) gets past Bun's guard: the node count stops it.
    expect(messageOf(laughs(5))).toBe(`front matter has more than ${MAX_FRONT_MATTER_NODES} values (aliases count at every use)`)
    for (let levels = 2; levels <= 9; levels++) expect(Either.isLeft(readFrontMatter(laughs(levels), "a.md"))).toBe(levels > 4)
  })

  test("a list of many aliases of a large list stops at the node cap without expanding it", () => {
    const big = `a: &a [${Array(5000).fill("x").join(",")}]`
    const many = `b: [${Array(2000).fill("*a").join(",")}]`
    expect(messageOf(`---\n${big}\n${many}\n---\n`)).toContain(`more than ${MAX_FRONT_MATTER_NODES} values`)
  })

  test("a self-referencing alias and deep nesting are refused by the depth cap", () => {
    expect(messageOf("---\na: &x\n  b: *x\n---\n")).toContain("nested deeper than")
    expect(messageOf(`---\na: ${"[".repeat(40)}1${"]".repeat(40)}\n---\n`)).toContain("nested deeper than")
  })

  test("__proto__ is an own key: Object.prototype is not polluted", () => {
    const r = readFrontMatter('---\n__proto__: { polluted: "yes" }\n"constructor": { prototype: { polluted: "yes" } }\n---\n', "a.md")
    expect(Either.isRight(r)).toBe(true)
    if (Either.isRight(r)) {
      expect(Object.getPrototypeOf(r.right.raw)).toBe(Object.prototype)
      expect(Object.keys(r.right.raw)).toEqual(["__proto__", "constructor"])
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.prototype).not.toHaveProperty("polluted")
  })

  test("__proto__ in an agent file is an unexpected key, at top level and inside metadata", () => {
    const text = SUPPORT_BOT_MD.replace(
      "metadata:\n  audience: runtime\n",
      'metadata:\n  __proto__: { audience: member }\n__proto__: { polluted: "yes", audience: member }\n'
    )
    const problems = problemsOf(parseAgentPackage(createPackageFiles({ "support-bot.md": text })))
    expect(problems.map((p) => p.path).sort()).toEqual(["support-bot.md#__proto__", "support-bot.md#metadata.__proto__"])
    expect(problems.every((p) => p.message.startsWith("is unexpected"))).toBe(true)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(({} as Record<string, unknown>).audience).toBeUndefined()
  })
})
