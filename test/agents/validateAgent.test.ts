import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { Either } from "effect"
import { type AgentPackage, parseAgentPackage } from "../../src/agents/AgentPackage.ts"
import { checkAgentPackage, toAgentDefinition, validateAgent } from "../../src/agents/validateAgent.ts"
import { AgentDefinition } from "../../src/contract/AgentDefinition.ts"
import { decodeAll } from "../../src/contract/Problem.ts"
import { createPackageFiles, problemsOf, SUPPORT_BOT_MD, valueOf } from "./fixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const pkg = (): AgentPackage => valueOf(parseAgentPackage(createPackageFiles()))
const shared = new Set(["house-style", "security-review"])
const sharedContent = new Map([
  ["house-style", "Write short sentences."],
  ["security-review", "Check inputs."]
])

describe("validateAgent: installation checks", () => {
  test("a valid package in an installation that has its shared skills has no problem", () => {
    expect(validateAgent(pkg(), { sharedSkills: shared })).toEqual([])
  })

  test("a shared skill that does not exist", () => {
    expect(validateAgent({ ...pkg(), skills: ["house-style", "nope"] }, { sharedSkills: shared })).toEqual([
      { path: "support-bot.md#skills.1", message: 'shared skill "nope" does not exist' }
    ])
  })

  test("runtime tools must be kernel tools or MCP grants of registered servers", () => {
    const agent = { ...pkg(), tools: ["read", "browser", "mcp__kb__search", "mcp__jira__*", "mcp__bad"] }
    expect(validateAgent(agent, { sharedSkills: shared, mcpServers: new Set(["kb"]) })).toEqual([
      { path: "support-bot.md#tools.1", message: expect.stringContaining('unknown tool "browser"') },
      { path: "support-bot.md#tools.4", message: expect.stringContaining('unknown tool "mcp__bad"') },
      { path: "support-bot.md#tools.3", message: 'MCP server "jira" is not registered' }
    ])
    // Without a server list, grants are only checked for their shape.
    expect(validateAgent(agent, { sharedSkills: shared }).map((p) => p.path)).toEqual(["support-bot.md#tools.1", "support-bot.md#tools.4"])
  })

  test("member agents are not held to kernel tools", () => {
    expect(validateAgent({ ...pkg(), audience: "member", tools: ["Read", "Bash"] }, { sharedSkills: shared })).toEqual([])
  })

  test("local and package-file skill names must not clash with the installation's shared skills", () => {
    const agent: AgentPackage = {
      ...pkg(),
      localSkills: [
        { name: "security-review", content: "x" },
        { name: "Bad", content: "x" }
      ],
      files: [{ path: "commands/inventory.md", content: "x" }]
    }
    expect(validateAgent(agent, { sharedSkills: new Set([...shared, "command-inventory"]) })).toEqual([
      { path: "skills/Bad/SKILL.md", message: expect.stringContaining('local skill name "Bad" must match') },
      {
        path: "skills/security-review/SKILL.md",
        message: 'skill name "security-review" is already a shared skill of this installation; rename it'
      },
      { path: "commands/inventory.md", message: 'skill name "command-inventory" is already a shared skill of this installation; rename it' }
    ])
  })

  test("name, thinking, deny patterns and instructions are checked on packages that did not come from the parser", () => {
    const agent = {
      ...pkg(),
      name: "Bad Name",
      thinking: "turbo",
      denyCommandPatterns: ["ok", "(?=x)", ""],
      instructions: " \n"
    } as unknown as AgentPackage
    expect(validateAgent(agent, { sharedSkills: shared })).toEqual([
      { path: "Bad Name.md#name", message: "must match [a-z][a-z0-9-]* and be at most 64 characters" },
      { path: "Bad Name.md#thinking", message: "must be one of off, minimal, low, medium, high, xhigh, max" },
      { path: "Bad Name.md#deny-command-patterns.1", message: "lookahead and lookbehind are not supported" },
      { path: "Bad Name.md#deny-command-patterns.2", message: "an empty pattern would block every command" },
      { path: "Bad Name.md#body", message: "instructions (the text after the front matter) must not be empty" }
    ])
  })
})

describe("checkAgentPackage: format and installation problems together", () => {
  test("installation problems are reported alongside format problems", () => {
    const text = SUPPORT_BOT_MD.replace("thinking: medium", "thinking: extreme").replace(
      "  - house-style",
      "  - house-style\n  - missing-skill"
    )
    const found = problemsOf(checkAgentPackage(createPackageFiles({ "support-bot.md": text }), { sharedSkills: shared }))
    expect(found).toEqual([
      { path: "support-bot.md#thinking", message: "must be one of off, minimal, low, medium, high, xhigh, max" },
      { path: "support-bot.md#skills.1", message: 'shared skill "missing-skill" does not exist' }
    ])
  })

  test("a valid package passes both", () => {
    expect(checkAgentPackage(createPackageFiles(), { sharedSkills: shared })).toEqual(Either.right(pkg()))
  })
})

describe("toAgentDefinition", () => {
  test("the kernel's AgentDefinition schema accepts the result", () => {
    const def = toAgentDefinition(pkg(), { version: 7, sharedSkills: sharedContent })
    expect(decodeAll(AgentDefinition)(def)).toEqual(Either.right(def))
  })

  test("fields, and skills in order: shared as listed, local by name, package files by path", () => {
    const agent: AgentPackage = { ...pkg(), skills: ["security-review", "house-style"] }
    const def = toAgentDefinition(agent, { version: 2, sharedSkills: sharedContent })
    expect(def.id).toBe("support-bot")
    expect(def.version).toBe(2)
    expect(def.instructions).toBe(agent.instructions)
    expect(def.tools).toEqual(["read", "grep", "shell"])
    expect(def.denyCommandPatterns).toEqual(["rm\\s+-rf"])
    expect(def.thinking).toBe("medium")
    expect(def.skills?.map((s) => s.name)).toEqual([
      "security-review",
      "house-style",
      "triage",
      "command-inventory",
      "script-count-sh",
      "workflow-release-notes"
    ])
    expect(def.skills?.[0]?.content).toBe("Check inputs.")
    expect(def.skills?.[3]?.content).toBe("# Inventory\nList the modules.\n")
    expect(def.skills?.[4]?.content).toBe('Script `scripts/count.sh` from the agent package:\n\n```sh\n#!/bin/sh\nwc -l "$@"\n```')
  })

  test("a script containing backticks gets a longer fence; no trailing newline is added twice", () => {
    const agent: AgentPackage = {
      ...pkg(),
      skills: [],
      localSkills: [],
      files: [{ path: "scripts/Make Docs.py", content: "print('```')" }]
    }
    const def = toAgentDefinition(agent, { version: 1, sharedSkills: new Map() })
    expect(def.skills).toEqual([
      { name: "script-make-docs-py", content: "Script `scripts/Make Docs.py` from the agent package:\n\n````py\nprint('```')\n````" }
    ])
    expect(Either.isRight(decodeAll(AgentDefinition)(def))).toBe(true)
  })

  test("absent tools, skills and thinking stay absent (every kernel tool), [] stays []", () => {
    const base = pkg()
    const { tools: _t, skills: _s, thinking: _th, denyCommandPatterns: _d, ...rest } = base
    const def = toAgentDefinition({ ...rest, localSkills: [], files: [] }, { version: 1, sharedSkills: new Map() })
    expect(def).toEqual({ id: "support-bot", version: 1, instructions: base.instructions })
    expect(toAgentDefinition({ ...base, tools: [] }, { version: 1, sharedSkills: sharedContent }).tools).toEqual([])
  })

  test("a missing shared skill is a broken precondition (validate first)", () => {
    expect(() => toAgentDefinition(pkg(), { version: 1, sharedSkills: new Map() })).toThrow('shared skill "house-style" is missing')
  })
})
