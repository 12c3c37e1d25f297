/** Fixture builders for agent package tests: a valid package as files, and variations of it. */
import { Either } from "effect"
import type { Problem } from "../../src/contract/Problem.ts"

export const SUPPORT_BOT_MD = `---
name: support-bot
version: 3
description: Answers questions about the code base.
tools:
  - read
  - grep
  - shell
skills:
  - house-style
thinking: medium
deny-command-patterns:
  - "rm\\\\s+-rf"
metadata:
  audience: runtime
---
You are the support bot.

Read WORKSPACE.md first.
`

export const createPackageFiles = (
  overrides: Record<string, string | Uint8Array | undefined> = {}
): Array<{ path: string; content: string | Uint8Array }> => {
  const files: Record<string, string | Uint8Array | undefined> = {
    "support-bot.md": SUPPORT_BOT_MD,
    "skills/triage/SKILL.md": "---\nname: triage\ndescription: How to triage.\n---\nSort by severity.\n",
    "commands/inventory.md": "# Inventory\nList the modules.\n",
    "workflows/release-notes.md": "1. Read CHANGELOG.md\n",
    "scripts/count.sh": '#!/bin/sh\nwc -l "$@"\n',
    ...overrides
  }
  return Object.entries(files).flatMap(([path, content]) => (content === undefined ? [] : [{ path, content }]))
}

export const problemsOf = <A>(r: Either.Either<A, Array<Problem>>): Array<Problem> => (Either.isLeft(r) ? r.left : [])

export const valueOf = <A>(r: Either.Either<A, Array<Problem>>): A => {
  if (Either.isLeft(r)) throw new Error(`expected success, got ${JSON.stringify(r.left, null, 2)}`)
  return r.right
}
