/**
 * What `kintsugi serve` prints while it starts and once it is ready: the database it opens and how,
 * and the ready line with the URL, the allowed hosts and where the admin password came from.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describeServing, readyLine } from "../../src/http/servingLine.ts"
import { describeDatabaseStart } from "../../src/http/startupLines.ts"

const dir = mkdtempSync(join(tmpdir(), "kintsugi-startup-lines-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the start-up lines", () => {
  test("the database: a server (no password shown), an existing embedded one, one from the template, or a first initdb", () => {
    expect(
      describeDatabaseStart({ databaseUrl: "postgres://kintsugi:s3cret-pw@db.internal:6543/prod", dataDir: dir, template: undefined })
    ).toBe("database: connecting to PostgreSQL at db.internal:6543/prod and applying migrations…")
    expect(
      describeDatabaseStart({ databaseUrl: "postgres://kintsugi:s3cret-pw@db.internal:6543/prod", dataDir: dir, template: undefined })
    ).not.toContain("s3cret")
    expect(describeDatabaseStart({ databaseUrl: undefined, dataDir: dir, template: "/cache/kintsugi/db-templates/migrated-1/data" })).toBe(
      `database: creating the embedded database in ${join(dir, "data")} from the template /cache/kintsugi/db-templates/migrated-1/data…`
    )
    expect(describeDatabaseStart({ databaseUrl: undefined, dataDir: dir, template: undefined })).toStartWith(
      `database: creating the embedded database in ${join(dir, "data")} (initdb and every migration; the first start on this machine takes a minute or two`
    )
    mkdirSync(join(dir, "data"))
    writeFileSync(join(dir, "data", "PG_VERSION"), "17\n")
    expect(describeDatabaseStart({ databaseUrl: undefined, dataDir: dir, template: "/unused" })).toBe(
      `database: opening the embedded database in ${join(dir, "data")} and applying migrations…`
    )
  })

  test("the ready line: URL, allowed hosts, and where the admin password came from", () => {
    const line = describeServing("127.0.0.1", 7777, ["localhost", "127.0.0.1", "[::1]"], false)
    expect(readyLine(line, "environment")).toBe(
      "serving on http://127.0.0.1:7777/ (allowed hosts: localhost,127.0.0.1,[::1]); admin password: KINTSUGI_ADMIN_PASSWORD (the first admin, admin, was created with it)"
    )
    expect(readyLine(line, "generated")).toEndWith("admin password: generated for admin and printed above, once")
    expect(readyLine(line, "existing")).toEndWith(
      "admin password: set before (users exist; KINTSUGI_ADMIN_PASSWORD only applies to an empty database; change yours at /account/password)"
    )
    expect(readyLine(line, undefined)).toEndWith("admin password: none: the first admin could not be created (see above)")
  })
})
