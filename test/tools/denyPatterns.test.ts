import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import {
  compileDenyPatterns,
  type DenyMatcher,
  MAX_DENY_INPUT_BYTES,
  MAX_DENY_PATTERNS,
  validateDenyPattern
} from "../../src/tools/denyPatterns.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const matcher = (patterns: ReadonlyArray<string>): DenyMatcher => {
  const r = compileDenyPatterns(patterns)
  if (Either.isLeft(r)) throw new Error(JSON.stringify(r.left))
  return r.right
}

describe("deny patterns: matching", () => {
  test("a hit blocks with a reason naming the pattern index, not the command", () => {
    const m = matcher(["^git push", "rm\\s+-rf\\s+/"])
    expect(m("ls -la")).toEqual({ blocked: false })
    const v = m("cd x && rm  -rf /tmp/secret-thing")
    expect(v).toEqual({ blocked: true, reason: "command matches denyCommandPatterns[1]" })
    if (v.blocked) expect(v.reason).not.toContain("secret-thing")
  })

  test("no patterns never blocks", () => {
    expect(matcher([])("anything at all")).toEqual({ blocked: false })
  })

  test("an oversize command is blocked (fail closed)", () => {
    const v = matcher(["touch"])("x".repeat(MAX_DENY_INPUT_BYTES + 1))
    expect(v.blocked).toBe(true)
    if (v.blocked) expect(v.reason).toContain(`${MAX_DENY_INPUT_BYTES} bytes`)
  })

  test("^(a+)+$ against an adversarial command answers without backtracking (a backtracking engine would not finish)", () => {
    const m = matcher(["^(a+)+$"])
    // About 2^39 steps for a backtracking engine at the first input; the test's timeout guards a hang.
    for (const n of [39, 1_000, MAX_DENY_INPUT_BYTES - 1]) expect(m(`${"a".repeat(n)}!`)).toEqual({ blocked: false })
    for (let i = 0; i < 10_000; i++) if (m(`${"a".repeat(39)}!`).blocked) throw new Error("an adversarial command was blocked")
    expect(m("a".repeat(39)).blocked).toBe(true)
  })
})

describe("deny patterns: validation", () => {
  test("backreferences and lookaround are rejected with a clear message", () => {
    expect(validateDenyPattern("(a)\\1")).toBe("backreferences are not supported")
    expect(validateDenyPattern("(?P<x>a)(?P=x)")).toBe("backreferences are not supported")
    expect(validateDenyPattern("(?=x)")).toBe("lookahead and lookbehind are not supported")
    expect(validateDenyPattern("a(?!b)")).toBe("lookahead and lookbehind are not supported")
    expect(validateDenyPattern("(?<=a)b")).toBe("lookahead and lookbehind are not supported")
    expect(validateDenyPattern("(?<!a)b")).toBe("lookahead and lookbehind are not supported")
  })

  test("escaped and bracketed look-alikes are ordinary patterns", () => {
    expect(validateDenyPattern("\\\\1")).toBeUndefined()
    expect(validateDenyPattern("[(?=]x")).toBeUndefined()
    expect(validateDenyPattern("[]\\\\1]")).toBeUndefined()
  })

  test("invalid syntax, empty, oversize and over-complex patterns are rejected", () => {
    expect(validateDenyPattern("(a")).toStartWith("invalid regular expression:")
    expect(validateDenyPattern("")).toBeDefined()
    expect(validateDenyPattern("a".repeat(1025))).toContain("1024 bytes")
    expect(validateDenyPattern("\\pL{1000}")).toContain("too complex")
    expect(validateDenyPattern("(?i)rm\\s+-rf")).toBeUndefined()
  })

  test("every problem is reported at once, by index; too many patterns is a problem", () => {
    const r = compileDenyPatterns(["ok", "(a)\\1", "fine", "(?=x)"])
    expect(Either.isLeft(r) && r.left.map((p) => p.index)).toEqual([1, 3])
    const many = compileDenyPatterns(Array.from({ length: MAX_DENY_PATTERNS + 1 }, (_, i) => `p${i}`))
    expect(Either.isLeft(many) && many.left[0]?.index).toBe(MAX_DENY_PATTERNS)
  })
})

describe("deny patterns: known bypasses (a tripwire, not a boundary)", () => {
  // Each of these runs `touch` when given to bash -c, yet none contains the literal word.
  const naive = matcher(["touch"])
  test.each([
    ["quoting", "t'o'uch /tmp/x"],
    ["ANSI-C quoting", "$'\\x74ouch' /tmp/x"],
    ["base64 into bash", "echo dG91Y2ggL3RtcC94 | base64 -d | bash"],
    ["variable splicing", "a=tou; b=ch; $a$b /tmp/x"]
  ])("%s is not matched by a naive pattern", (_name, command) => {
    expect(naive(command)).toEqual({ blocked: false })
  })

  test("the bypass spellings really do run touch", async () => {
    const cwd = (await Bun.$`mktemp -d`.text()).trim()
    try {
      for (const command of ["t'o'uch a", "$'\\x74ouch' b", "echo dG91Y2ggYw== | base64 -d | bash"]) {
        await Bun.$`bash -c ${command}`.cwd(cwd).quiet()
      }
      expect((await Bun.$`ls`.cwd(cwd).text()).split("\n").filter(Boolean).sort()).toEqual(["a", "b", "c"])
    } finally {
      await Bun.$`rm -rf ${cwd}`.quiet()
    }
  })
})
