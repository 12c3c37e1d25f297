/** `--json` where a command prints results: `users token`, `users tokens`, `agents validate`. */
import { expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Layer } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { AccessLive } from "../../src/access/Access.ts"
import { runUsersOp } from "../../src/access/usersCommand.ts"
import type { Db } from "../../src/db/Db.ts"
import { SUPPORT_BOT_MD } from "../agents/fixtures.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(30_000)
const db = useTestDb(AccessLive)
const CLI = path.join(import.meta.dir, "..", "..", "src", "cli.ts")

test("users token --json and users tokens --json print JSON, never the token in the list", async () => {
  const out: Array<string> = []
  const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(`ERR ${l}`), stdin: async () => "a very long password\n" }
  const layer = Layer.succeedContext(await db.run(Effect.context<Db>()))
  expect(await runUsersOp({ op: "add", username: "jo", grants: [] }, io, layer)).toBe(0)
  expect(await runUsersOp({ op: "token", username: "jo", name: "ci", days: 7, json: true }, io, layer)).toBe(0)
  const issued = JSON.parse(out.pop() ?? "") as { token: string; name: string; expiresDays: number }
  expect(issued).toMatchObject({ username: "jo", name: "ci", expiresDays: 7 })
  expect(issued.token.length).toBeGreaterThan(20)
  expect(await runUsersOp({ op: "tokens", username: "jo", json: true }, io, layer)).toBe(0)
  const listed = out.pop() ?? ""
  expect(listed).not.toContain(issued.token)
  const tokens = JSON.parse(listed) as Array<{ name: string; status: string; lastUsedAt: string | null; expiresAt: string }>
  expect(tokens).toHaveLength(1)
  expect(tokens[0]).toMatchObject({ name: "ci", status: "active", lastUsedAt: null })
  expect(Number.isNaN(Date.parse(tokens[0]?.expiresAt ?? ""))).toBe(false)
})

test("kintsugi agents validate --json: one JSON object; exit 0 valid, 1 with problems", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-json-"))
  try {
    fs.writeFileSync(path.join(dir, "support-bot.md"), SUPPORT_BOT_MD)
    fs.writeFileSync(path.join(dir, "broken.md"), "---\nname: Not A Slug\n---\n")
    const validate = (file: string) => {
      const p = Bun.spawnSync(["bun", CLI, "agents", "validate", "--json", path.join(dir, file)], {
        env: { ...process.env, KINTSUGI_SANDBOX: "auto" }
      })
      return { code: p.exitCode, report: JSON.parse(p.stdout.toString()) as { problems: Array<unknown>; package?: { name: string } } }
    }
    const ok = validate("support-bot.md")
    expect(ok.code).toBe(0)
    expect(ok.report.problems).toEqual([])
    expect(ok.report.package?.name).toBe("support-bot")
    const bad = validate("broken.md")
    expect(bad.code).toBe(1)
    expect(bad.report.problems.length).toBeGreaterThan(0)
    expect(bad.report.package).toBeUndefined()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
