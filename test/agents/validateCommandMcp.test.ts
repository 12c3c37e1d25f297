/**
 * `kintsugi agents validate` checks MCP grants against `--mcp-servers` or the installation's registry
 * (DATABASE_URL, or an embedded database no serve holds), with the Agent Builder's wording; else a note.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { makeDbLayer } from "../../src/db/Db.ts"
import { checkAgentPackage } from "../../src/agents/validateAgent.ts"
import { agentsValidate } from "../../src/agents/validateCommand.ts"
import { adminStatement, createTestDataDir, usingServer } from "../support/db.ts"
import { createPackageFiles, problemsOf, SUPPORT_BOT_MD } from "./fixtures.ts"

setDefaultTimeout(60_000)

const CLI = path.join(import.meta.dir, "..", "..", "src", "cli.ts")
const KB_BOT_MD = SUPPORT_BOT_MD.replace("  - shell", "  - mcp__kb__search")
const OTHER_BOT_MD = SUPPORT_BOT_MD.replace("  - shell", "  - mcp__other__*")
const NOT_REGISTERED = (server: string) => `support-bot.md#tools.2: MCP server "${server}" is not registered`

let tmp = ""
let kbFile = ""
let otherFile = ""
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-validate-mcp-"))
  kbFile = path.join(tmp, "kb", "support-bot.md")
  otherFile = path.join(tmp, "other", "support-bot.md")
  for (const [file, text] of [
    [kbFile, KB_BOT_MD],
    [otherFile, OTHER_BOT_MD]
  ] as const) {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, text)
  }
})
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

const run = async (env: Record<string, string>, file: string, mcpServers?: string) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await agentsValidate(file, { out: (l) => out.push(l), err: (l) => err.push(l) }, env, { mcpServers })
  return { code, out, err }
}

const noInstallation = () => ({ KINTSUGI_DATA_DIR: path.join(tmp, "no-installation") })

/** Registers `names` in the database of `options` (headers sealed with no key anyone has: names only are read). */
const register = (options: Parameters<typeof makeDbLayer>[0], names: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.forEach(
        names,
        (name) =>
          sql`INSERT INTO admin.mcp_server (name, url, headers_sealed, updated_by) VALUES (${name}, 'https://mcp.example.com/', 'not-decryptable', 'test')`
      )
    ).pipe(Effect.provide(makeDbLayer(options)))
  )

describe("--mcp-servers", () => {
  test("a grant of a server not in the list: exit 1 naming it, the Agent Builder's path and message", async () => {
    const r = await run(noInstallation(), kbFile, "search,docs")
    expect(r).toEqual({
      code: 1,
      out: [NOT_REGISTERED("kb"), "note: shared skills are checked when the agent is installed: house-style"],
      err: []
    })
    const builder = problemsOf(
      checkAgentPackage(createPackageFiles({ "support-bot.md": KB_BOT_MD }), {
        sharedSkills: new Set(["house-style"]),
        mcpServers: new Set()
      })
    )
    expect(builder.map((p) => `${p.path}: ${p.message}`)).toEqual([NOT_REGISTERED("kb")])
    expect((await run(noInstallation(), kbFile, "")).out).toContain(NOT_REGISTERED("kb"))
  })

  test("a registered server: exit 0; the registry is not read", async () => {
    const r = await run({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }, kbFile, " docs , kb ")
    expect(r).toEqual({
      code: 0,
      out: ["note: shared skills are checked when the agent is installed: house-style", "ok: support-bot v3 (runtime)"],
      err: []
    })
  })

  test("through the CLI: --json carries the problem, exit 1", () => {
    const env: Record<string, string | undefined> = { ...process.env, ...noInstallation(), KINTSUGI_SANDBOX: "auto" }
    delete env["DATABASE_URL"]
    const cli = (servers: string) => Bun.spawnSync(["bun", CLI, "agents", "validate", "--json", "--mcp-servers", servers, kbFile], { env })
    const bad = cli("docs")
    expect(bad.exitCode).toBe(1)
    expect(JSON.parse(bad.stdout.toString()).problems).toEqual([
      { path: "support-bot.md#tools.2", message: 'MCP server "kb" is not registered' }
    ])
    expect(cli("kb").exitCode).toBe(0)
  })
})

describe("the installation's registry", () => {
  test("no data dir: the note, and no data dir is created", async () => {
    const env = noInstallation()
    const r = await run(env, kbFile)
    expect(r.code).toBe(0)
    expect(r.out).toContain("note: MCP servers are checked when the agent is installed: kb")
    expect(fs.existsSync(env.KINTSUGI_DATA_DIR)).toBe(false)
  })

  test("an embedded database: registered → exit 0, another → exit 1; locked by a running serve → the note and a hint; pending migrations → the note", async () => {
    const { dataDir, cleanup } = await createTestDataDir()
    try {
      await register({ dataDir }, ["kb"])
      const env = { KINTSUGI_DATA_DIR: path.dirname(dataDir) }
      expect((await run(env, kbFile)).code).toBe(0)
      const other = await run(env, otherFile)
      expect(other.code).toBe(1)
      expect(other.out).toContain(NOT_REGISTERED("other"))
      expect(fs.existsSync(`${dataDir}.lock`)).toBe(false) // closed again

      const serve = Bun.spawn(["sleep", "600"]) // a live process holding the lock, as a running serve does
      try {
        fs.writeFileSync(`${dataDir}.lock`, String(serve.pid))
        const locked = await run(env, otherFile)
        expect(locked.code).toBe(0)
        expect(locked.out).toContain("note: MCP servers are checked when the agent is installed: other")
        expect(locked.out).toContain(
          `note: the installation's MCP servers could not be read: the embedded database at ${dataDir} is in use by process ${serve.pid} (a running kintsugi serve); pass --mcp-servers <a,b> to check against a list`
        )
      } finally {
        serve.kill()
        await serve.exited
        fs.rmSync(`${dataDir}.lock`, { force: true })
      }

      await Effect.runPromise(
        Effect.flatMap(
          SqlClient,
          (sql) => sql`DELETE FROM effect_sql_migrations WHERE migration_id = (SELECT max(migration_id) FROM effect_sql_migrations)`
        ).pipe(Effect.provide(makeDbLayer({ dataDir })))
      )
      const pending = await run(env, otherFile)
      expect(pending.code).toBe(0)
      expect(pending.out).toContain("note: MCP servers are checked when the agent is installed: other")
      expect(pending.out.join("\n")).toContain("has 1 pending migration (kintsugi migrate applies them)")
    } finally {
      cleanup()
    }
  })

  test("an unreachable DATABASE_URL: the note with the reason, no hang", async () => {
    const r = await run({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }, kbFile)
    expect(r.code).toBe(0)
    expect(r.out).toContain("note: MCP servers are checked when the agent is installed: kb")
    expect(r.out.join("\n")).toContain("cannot reach the database at 127.0.0.1:1/none")
  })

  test.skipIf(!usingServer())("DATABASE_URL (a throwaway database on the PostgreSQL server; skipped without DATABASE_URL)", async () => {
    const base = process.env["DATABASE_URL"] ?? ""
    const name = `kintsugi_test_${randomBytes(6).toString("hex")}`
    const url = new URL(base)
    url.pathname = `/${name}`
    await adminStatement(base, `CREATE DATABASE ${name}`)
    try {
      await register({ url: url.toString(), migrate: true }, ["kb"])
      const env = { DATABASE_URL: url.toString(), ...noInstallation() }
      expect((await run(env, kbFile)).code).toBe(0)
      const other = await run(env, otherFile)
      expect(other.code).toBe(1)
      expect(other.out).toContain(NOT_REGISTERED("other"))
    } finally {
      await adminStatement(base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  })
})
