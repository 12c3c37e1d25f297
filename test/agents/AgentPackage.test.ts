import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import {
  type AgentPackage,
  MAX_PACKAGE_BYTES,
  MAX_PACKAGE_FILE_BYTES,
  MAX_PACKAGE_FILES,
  parseAgentPackage,
  serializeAgentPackage
} from "../../src/agents/AgentPackage.ts"
import { createPackageFiles, problemsOf, SUPPORT_BOT_MD, valueOf } from "./fixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const parse = (overrides: Record<string, string | Uint8Array | undefined> = {}) => parseAgentPackage(createPackageFiles(overrides))
const problems = (overrides: Record<string, string | Uint8Array | undefined>) => problemsOf(parse(overrides))

describe("parseAgentPackage: a valid package", () => {
  test("reads the front matter, the body verbatim, local skills and package files", () => {
    const pkg = valueOf(parse())
    expect(pkg).toEqual({
      name: "support-bot",
      version: 3,
      description: "Answers questions about the code base.",
      tools: ["read", "grep", "shell"],
      skills: ["house-style"],
      thinking: "medium",
      denyCommandPatterns: ["rm\\s+-rf"],
      audience: "runtime",
      instructions: "You are the support bot.\n\nRead WORKSPACE.md first.\n",
      localSkills: [{ name: "triage", content: "---\nname: triage\ndescription: How to triage.\n---\nSort by severity.\n" }],
      files: [
        { path: "commands/inventory.md", content: "# Inventory\nList the modules.\n" },
        { path: "scripts/count.sh", content: '#!/bin/sh\nwc -l "$@"\n' },
        { path: "workflows/release-notes.md", content: "1. Read CHANGELOG.md\n" }
      ]
    })
  })

  test("optional fields: absent stays absent, [] stays [], audience defaults to runtime", () => {
    const minimal = '---\nname: mini\nversion: "1.0.0"\ndescription: d\n---\nDo it.\n'
    expect(valueOf(parseAgentPackage([{ path: "mini.md", content: minimal }]))).toEqual({
      name: "mini",
      version: "1.0.0",
      description: "d",
      audience: "runtime",
      instructions: "Do it.\n",
      localSkills: [],
      files: []
    })
    const none = "---\nname: mini\nversion: 1\ndescription: d\ntools: []\nskills: []\n---\nDo it.\n"
    const pkg = valueOf(parseAgentPackage([{ path: "mini.md", content: none }]))
    expect(pkg.tools).toEqual([])
    expect(pkg.skills).toEqual([])
  })

  test("content may be bytes (UTF-8); a BOM before the agent file's front matter is tolerated", () => {
    const bytes = new TextEncoder().encode(`\uFEFF${SUPPORT_BOT_MD}`)
    expect(valueOf(parse({ "support-bot.md": bytes })).name).toBe("support-bot")
  })

  test("a member agent may list tools the kernel does not have", () => {
    const pkg = valueOf(
      parse({
        "support-bot.md": SUPPORT_BOT_MD.replace("  - read\n  - grep\n  - shell", "  - Read\n  - Bash\n  - WebFetch").replace(
          "audience: runtime",
          "audience: member"
        )
      })
    )
    expect(pkg.audience).toBe("member")
    expect(pkg.tools).toEqual(["Read", "Bash", "WebFetch"])
  })
})

describe("parseAgentPackage: every problem at once", () => {
  test("bad name + unknown tool + bad skill names + bad deny pattern + bad thinking", () => {
    const text = SUPPORT_BOT_MD.replace("name: support-bot", "name: Support_Bot")
      .replace("  - shell", "  - shell\n  - browser")
      .replace("  - house-style", "  - House Style")
      .replace('  - "rm\\\\s+-rf"', '  - "(a)\\\\1"')
      .replace("thinking: medium", "thinking: extreme")
    const found = problemsOf(
      parseAgentPackage([
        { path: "support-bot.md", content: text },
        { path: "skills/Bad Name/SKILL.md", content: "Do things.\n" }
      ])
    )
    expect(found).toEqual(
      expect.arrayContaining([
        { path: "support-bot.md#name", message: "must match [a-z][a-z0-9-]* and be at most 64 characters" },
        { path: "support-bot.md#name", message: 'must equal the file name: support-bot.md declares "Support_Bot"' },
        { path: "support-bot.md#thinking", message: "must be one of off, minimal, low, medium, high, xhigh, max" },
        { path: "support-bot.md#tools.3", message: expect.stringContaining('unknown tool "browser"') },
        { path: "support-bot.md#skills.0", message: 'skill name "House Style" must match [a-z][a-z0-9-]*' },
        { path: "support-bot.md#deny-command-patterns.0", message: "backreferences are not supported" },
        { path: "skills/Bad Name/SKILL.md", message: expect.stringContaining('local skill name "Bad Name" must match') }
      ])
    )
    expect(found).toHaveLength(7)
  })

  test("missing and unexpected keys, wrong types, bad metadata", () => {
    const text = '---\nversion: [1]\ndescription: ""\ntools: read\nauthor: x\nmetadata: { audience: everyone, owner: me }\n---\nHi.\n'
    const found = problems({ "support-bot.md": text })
    const paths = found.map((p) => `${p.path} ${p.message}`)
    expect(paths).toEqual(
      expect.arrayContaining([
        "support-bot.md#name is missing",
        expect.stringMatching(/^support-bot\.md#version must be a number or a non-empty string/),
        "support-bot.md#description must not be empty",
        expect.stringMatching(/^support-bot\.md#tools /),
        "support-bot.md#metadata.audience must be one of runtime, member",
        expect.stringMatching(/^support-bot\.md#author is unexpected/)
      ])
    )
    // Other metadata keys are kept as written (imported files keep their foreign keys there).
    expect(paths.some((p) => p.includes("metadata.owner"))).toBe(false)
  })

  test("empty instructions", () => {
    expect(problems({ "support-bot.md": SUPPORT_BOT_MD.replace(/\n---\n[^]*$/, "\n---\n  \n") })).toContainEqual({
      path: "support-bot.md#body",
      message: "instructions (the text after the front matter) must not be empty"
    })
  })

  test("exactly one top-level <name>.md whose name matches the front matter", () => {
    expect(problems({ "support-bot.md": undefined })).toContainEqual({
      path: "(package)",
      message: "no top-level <name>.md (the agent file)"
    })
    const two = problems({ "other.md": SUPPORT_BOT_MD })
    expect(
      two
        .filter((p) => p.message.startsWith("a package has exactly one top-level <name>.md"))
        .map((p) => p.path)
        .sort()
    ).toEqual(["other.md", "support-bot.md"])
    const renamed = parseAgentPackage([{ path: "helper.md", content: SUPPORT_BOT_MD }])
    expect(problemsOf(renamed)).toEqual([{ path: "helper.md#name", message: 'must equal the file name: helper.md declares "support-bot"' }])
  })

  test("file names: absolute, .., backslash, drive letter, NUL, control characters, unknown places", () => {
    const found = problems({
      "/abs.md": "x",
      "../../x.md": "x",
      "commands\\a.md": "x",
      "C:/x.md": "x",
      "scripts/a\u0000.sh": "x",
      "scripts/b\u001b[31m.sh": "x",
      "notes/readme.md": "x",
      "commands/sub/a.md": "x",
      "commands/a.txt": "x",
      "skills/triage/extra.md": "x"
    })
    expect(found).toEqual(
      expect.arrayContaining([
        { path: "/abs.md", message: "absolute paths are not allowed" },
        { path: "../../x.md", message: "`..` segments are not allowed" },
        { path: "commands\\a.md", message: "file name contains a backslash (use / between folders)" },
        { path: "C:/x.md", message: "drive letters are not allowed" },
        { path: "scripts/a\\u0000.sh", message: "file name contains a NUL character" },
        { path: "scripts/b\\u001b[31m.sh", message: "file name contains a control character" },
        { path: "notes/readme.md", message: expect.stringContaining("not a package file") },
        { path: "commands/sub/a.md", message: "commands/ holds files directly, no sub-folders" },
        { path: "commands/a.txt", message: "commands must be .md files" },
        { path: "skills/triage/extra.md", message: expect.stringContaining("not a package file") }
      ])
    )
  })

  test("duplicates after case folding and Unicode NFC normalisation", () => {
    const composed = "commands/caf\u00e9.md"
    const decomposed = "commands/cafe\u0301.md"
    const found = problems({ "commands/Inventory.md": "x", [composed]: "x", [decomposed]: "x" })
    expect(found).toContainEqual({
      path: "commands/Inventory.md",
      message: 'duplicate of "commands/inventory.md" (names are compared ignoring case and Unicode normalisation)'
    })
    expect(found).toContainEqual({ path: decomposed, message: expect.stringContaining(`duplicate of "${composed}"`) })
  })

  test("text must be valid UTF-8 without NUL; sizes are capped per file, in total and in count", () => {
    expect(problems({ "scripts/bin.sh": Uint8Array.of(0x41, 0xff, 0xfe) })).toContainEqual({
      path: "scripts/bin.sh",
      message: "is not valid UTF-8 text"
    })
    expect(problems({ "scripts/nul.sh": "a\u0000b" })).toContainEqual({
      path: "scripts/nul.sh",
      message: "contains NUL characters: binary files are not supported"
    })
    expect(problems({ "scripts/big.sh": "x".repeat(MAX_PACKAGE_FILE_BYTES + 1) })).toContainEqual({
      path: "scripts/big.sh",
      message: `larger than ${MAX_PACKAGE_FILE_BYTES} bytes (${MAX_PACKAGE_FILE_BYTES + 1})`
    })
    const many: Record<string, string> = {}
    for (let i = 0; i < 5; i++) many[`scripts/s${i}.sh`] = "x".repeat(MAX_PACKAGE_FILE_BYTES - 10)
    expect(problems(many)).toContainEqual({ path: "(package)", message: expect.stringContaining(`larger than ${MAX_PACKAGE_BYTES} bytes`) })
    const tooMany = Array.from({ length: MAX_PACKAGE_FILES + 1 }, (_, i) => ({ path: `scripts/s${i}.sh`, content: "x" }))
    expect(problemsOf(parseAgentPackage(tooMany))).toEqual([
      { path: "(package)", message: `more than ${MAX_PACKAGE_FILES} files (found ${MAX_PACKAGE_FILES + 1})` }
    ])
  })

  test("local skills: optional front matter must be YAML of name/description, name = folder", () => {
    const found = problems({
      "skills/triage/SKILL.md": "---\nname: triage-two\nlicense: MIT\n---\nx\n",
      "skills/review/SKILL.md": "---js\nglobalThis.x = 1\n---\n"
    })
    expect(found).toEqual(
      expect.arrayContaining([
        { path: "skills/triage/SKILL.md#name", message: 'must equal the folder name "triage"' },
        { path: "skills/triage/SKILL.md#license", message: expect.stringMatching(/^is unexpected/) },
        { path: "skills/review/SKILL.md", message: expect.stringContaining("language tags") }
      ])
    )
  })

  test("skill names must be unique across shared, local and package-file skills", () => {
    const found = problems({
      "skills/house-style/SKILL.md": "x",
      "skills/command-inventory/SKILL.md": "x",
      "scripts/count-sh": "x",
      "commands/_.md": "x"
    })
    expect(found).toEqual(
      expect.arrayContaining([
        { path: "skills/house-style/SKILL.md", message: 'skill name "house-style" is already used by the shared skill listed at skills.0' },
        { path: "commands/inventory.md", message: 'skill name "command-inventory" is already used by skills/command-inventory/SKILL.md' },
        { path: "scripts/count-sh", message: 'skill name "script-count-sh" is already used by scripts/count.sh' },
        { path: "commands/_.md", message: "no skill name can be made from this file name (use letters or digits)" }
      ])
    )
  })
})

describe("serializeAgentPackage: round trip", () => {
  const roundTrip = (pkg: AgentPackage) => valueOf(parseAgentPackage(serializeAgentPackage(pkg)))

  test("parse(serialize(p)) deep-equals p for the fixture package", () => {
    const pkg = valueOf(parse())
    expect(roundTrip(pkg)).toEqual(pkg)
    expect(serializeAgentPackage(pkg).map((f) => f.path)).toEqual([
      "support-bot.md",
      "skills/triage/SKILL.md",
      "commands/inventory.md",
      "scripts/count.sh",
      "workflows/release-notes.md"
    ])
  })

  test("awkward strings, versions and empty lists survive", () => {
    const base = valueOf(parse())
    const awkward = [
      "yes",
      "no",
      "null",
      "~",
      "true",
      "1.10",
      "0x1F",
      "*alias",
      "&anchor",
      "- dash",
      "key: value",
      "# hash",
      "'quoted'",
      '"double"',
      "multi\nline\n",
      "tab\there",
      "back\\slash",
      "nel\u0085x",
      "ls\u2028ps\u2029",
      "bom\ufeff",
      "del\u007f",
      "emoji 🙂",
      "  padded  ",
      "---",
      "...",
      "%TAG",
      "@at",
      "`tick`",
      "{flow}",
      "[list]",
      "!tag",
      "|",
      ">"
    ]
    const pkgs: Array<AgentPackage> = [
      { ...base, description: awkward.join(" / "), tools: ["read", "mcp__kb__*", "mcp__kb__search.v2"], skills: [] },
      { ...base, version: "1.10", denyCommandPatterns: [], localSkills: [], files: [] },
      { ...base, version: 1.5, tools: [], instructions: "---\nnot front matter\n---\n" },
      { ...base, version: 1e21, instructions: "\n\nleading blank lines\r\nand CRLF" },
      { ...base, audience: "member", tools: awkward.filter((s) => s.trim() === s && s.length > 0 && !s.includes("\n")) }
    ]
    for (const pkg of pkgs) expect(roundTrip(pkg)).toEqual(pkg)
    for (const word of awkward) {
      const pkg = { ...base, description: word.trim() === "" ? "x" : word }
      expect(roundTrip(pkg).description).toBe(pkg.description)
    }
  })

  test("the written agent file starts with exactly ---", () => {
    const [main] = serializeAgentPackage(valueOf(parse()))
    expect(main?.content.startsWith("---\nname: support-bot\n")).toBe(true)
    expect(Either.isRight(parseAgentPackage(serializeAgentPackage(valueOf(parse()))))).toBe(true)
  })
})
