/**
 * `kintsugi users` as a process: with a server running it goes through the API (from an empty
 * folder it lists the users and creates nothing there, and every change applies at once); with a
 * server but no token it says how to get one; with no server it opens the installation's database, and
 * with none where the data dir resolves it says where it looked, exits 1 and creates nothing. The data
 * dir does not follow the shell's current folder.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Access } from "../../src/access/Access.ts"
import { INSTALL_DIR, resolveDataDir } from "../../src/cli/installation.ts"
import { listen } from "../../src/http/serve.ts"
import { adminStatement, createTestDataDir, usingServer, withDatabase } from "../support/db.ts"
import { makeTestApp, type TestApp } from "../support/testApp.ts"

setDefaultTimeout(120_000)

const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
/** Nothing listens on port 1: "no server is up", whatever else runs on this machine's 7777. */
const NO_SERVER = "http://127.0.0.1:1"
const PASSWORD = "a long test password"

const emptyFolder = (prefix: string) => realpathSync(mkdtempSync(join(tmpdir(), prefix)))

/** Bun keeps its caches under HOME: a folder of its own, so that the command's folder shows only what kintsugi made. */
const HOME = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-users-home-")))
afterAll(() => rmSync(HOME, { recursive: true, force: true }))

/** Runs `kintsugi users <args>` in `cwd` with exactly `env` (plus PATH and HOME), `stdin` as its input. */
const users = async (cwd: string, args: ReadonlyArray<string>, env: Record<string, string>, stdin = "") => {
  const child = Bun.spawn(["bun", CLI, "users", ...args], {
    cwd,
    stdin: new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env["PATH"] ?? "", HOME, NO_PROXY: "127.0.0.1,localhost", NO_COLOR: "1", ...env }
  })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { out, err, code }
}

describe("with a server running", () => {
  let made: TestApp
  let server: ReturnType<typeof listen>
  let url: string
  let token: string
  const parent = emptyFolder("kintsugi-users-")
  const cwd = join(parent, "here")
  // Where the data dir would be: never opened, never created while the server answers.
  const absent = join(parent, "no-installation")

  beforeAll(async () => {
    ;(await import("node:fs")).mkdirSync(cwd)
    made = await makeTestApp()
    token = await made.addUser("boss", PASSWORD, ["agents.manage", "providers.manage"])
    await made.addUser("viewer", PASSWORD, [])
    server = listen(made.app, { hostname: "127.0.0.1", port: 0 })
    url = `http://127.0.0.1:${server.port}`
  })
  afterAll(async () => {
    await server.stop(true)
    await made.dispose()
    rmSync(parent, { recursive: true, force: true })
  })

  const env = () => ({ KINTSUGI_URL: url, KINTSUGI_TOKEN: token, KINTSUGI_DATA_DIR: absent })

  test("`kintsugi users list` from an empty folder lists the users and creates nothing there", async () => {
    const r = await users(cwd, ["list"], env())
    expect(r.err).toBe("")
    expect(r.code).toBe(0)
    const lines = r.out.trim().split("\n")
    expect(lines.map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      ["boss", "agents.manage,providers.manage", "enabled"],
      ["viewer", "read", "only"]
    ])
    expect(readdirSync(cwd)).toEqual([])
    expect(existsSync(absent)).toBe(false)
    const json = await users(cwd, ["list", "--json"], env())
    expect(JSON.parse(json.out).map((u: { username: string; permissions: Array<string> }) => [u.username, u.permissions])).toEqual([
      ["boss", ["agents.manage", "providers.manage"]],
      ["viewer", []]
    ])
  })

  test("add, grant, password, revoke, disable, enable through the API: each applies at once", async () => {
    const added = await users(cwd, ["add", "colleague", "--grant", "agents.manage"], env(), "colleague's first password\n")
    expect({ code: added.code, out: added.out, err: added.err }).toEqual({
      code: 0,
      out: "created user colleague with agents.manage\n",
      err: ""
    })
    await made.runtime.runPromise(Effect.flatMap(Access, (a) => a.signIn("colleague", "colleague's first password")))
    expect((await users(cwd, ["grant", "colleague", "providers.manage"], env())).out).toBe("granted providers.manage to colleague\n")
    expect((await made.runtime.runPromise(Effect.flatMap(Access, (a) => a.user("colleague")))).permissions).toEqual([
      "agents.manage",
      "providers.manage"
    ])
    const reset = await users(cwd, ["password", "colleague"], { ...env(), KINTSUGI_USER_PASSWORD: "colleague's second password" })
    expect(reset.out).toBe("set the password of colleague; their sessions ended\n")
    await made.runtime.runPromise(Effect.flatMap(Access, (a) => a.signIn("colleague", "colleague's second password")))
    expect((await users(cwd, ["revoke", "colleague", "agents.manage"], env())).out).toBe("removed agents.manage from colleague\n")
    expect((await users(cwd, ["disable", "colleague"], env())).out).toBe("disabled colleague\n")
    expect((await made.runtime.runPromise(Effect.flatMap(Access, (a) => a.user("colleague")))).disabledAt).not.toBeNull()
    expect((await users(cwd, ["enable", "colleague"], env())).out).toBe("enabled colleague\n")
    expect(readdirSync(cwd)).toEqual([])
    expect(existsSync(absent)).toBe(false)
  })

  test("refusals name what is wrong and exit 1; a new token is for a signed-in session only", async () => {
    const self = await users(cwd, ["revoke", "boss", "providers.manage"], env())
    expect(self.code).toBe(1)
    // colleague holds providers.manage too, but boss is the only admin (both permissions).
    expect(self.err).toBe(
      "kintsugi users: boss is the last enabled user with every admin permission (agents.manage and providers.manage); without one nobody can manage users: make someone else an admin first\n"
    )
    const weak = await users(cwd, ["add", "newbie"], env(), "short\n")
    expect({ code: weak.code, err: weak.err }).toEqual({
      code: 1,
      err: "kintsugi users: password: a password has at least 12 characters\n"
    })
    const nobody = await users(cwd, ["grant", "nobody", "agents.manage"], env())
    expect({ code: nobody.code, err: nobody.err }).toEqual({ code: 1, err: 'kintsugi users: no user "nobody"\n' })
    const minted = await users(cwd, ["token", "boss"], env())
    expect(minted.code).toBe(1)
    expect(minted.err).toContain(
      `makes API tokens only for a signed-in session: sign in as boss on the portal's account page (${url}/account)`
    )
    const listed = await users(cwd, ["tokens", "boss"], env())
    expect(listed.out).toMatch(/^[0-9a-f-]{36}  boss-test  active  created /)
    const notAdmin = await users(cwd, ["list"], {
      ...env(),
      KINTSUGI_TOKEN: await made.runtime.runPromise(Effect.flatMap(Access, (a) => a.issueToken("viewer", "cli")))
    })
    expect({ code: notAdmin.code, err: notAdmin.err }).toEqual({
      code: 1,
      err: "kintsugi users: this needs every admin permission (agents.manage, providers.manage)\n"
    })
    const badToken = await users(cwd, ["list"], { ...env(), KINTSUGI_TOKEN: "kt_not-a-token" })
    expect(badToken.err).toContain("refused the token")
  })

  test("a server but no token: says where to put one, exit 2, opens nothing", async () => {
    const r = await users(cwd, ["list"], { KINTSUGI_URL: url, KINTSUGI_DATA_DIR: absent })
    expect(r.code).toBe(2)
    expect(r.err).toContain(
      `a kintsugi server is running at ${url}: set KINTSUGI_TOKEN or put an admin's API token in ${join(HOME, ".config", "kintsugi", "token")}`
    )
    expect(readdirSync(cwd)).toEqual([])
    expect(existsSync(absent)).toBe(false)
  })
})

describe("with no server", () => {
  test("no installation where the data dir resolves: says where it looked, exit 1, creates nothing", async () => {
    const cwd = emptyFolder("kintsugi-users-nowhere-")
    try {
      // A relative KINTSUGI_DATA_DIR is taken from the installation directory, never from the shell's folder.
      const relative = `test-artifacts/users-cli-absent-${process.pid}`
      const r = await users(cwd, ["list"], { KINTSUGI_URL: NO_SERVER, KINTSUGI_DATA_DIR: relative })
      expect(r.code).toBe(1)
      expect(r.out).toBe("")
      expect(r.err).toContain(`no server answers at ${NO_SERVER} and the data dir ${join(INSTALL_DIR, relative)} holds no database`)
      for (const args of [
        ["add", "someone"],
        ["grant", "someone", "agents.manage"],
        ["password", "someone"]
      ]) {
        expect((await users(cwd, args, { KINTSUGI_URL: NO_SERVER, KINTSUGI_DATA_DIR: relative }, "a long enough password\n")).code).toBe(1)
      }
      expect(readdirSync(cwd)).toEqual([])
      expect(existsSync(join(INSTALL_DIR, relative))).toBe(false)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  test("the data dir resolves the same from every folder: KINTSUGI_DATA_DIR, else the installation's .kintsugi", () => {
    expect(resolveDataDir(undefined, "/opt/kintsugi")).toBe("/opt/kintsugi/.kintsugi")
    expect(resolveDataDir("", "/opt/kintsugi")).toBe("/opt/kintsugi/.kintsugi")
    expect(resolveDataDir("state", "/opt/kintsugi")).toBe("/opt/kintsugi/state")
    expect(resolveDataDir("/data", "/opt/kintsugi")).toBe("/data")
    expect(INSTALL_DIR).toBe(dirname(dirname(CLI)))
  })

  test("an installation there: the command opens it, from any folder", async () => {
    const cwd = emptyFolder("kintsugi-users-local-")
    let cleanup = () => undefined as void
    try {
      let env: Record<string, string>
      if (usingServer()) {
        // A database with no installation in it is refused, not migrated; `kintsugi migrate` makes one.
        const server = process.env["DATABASE_URL"] ?? ""
        const name = `kintsugi_test_cli_${process.pid}`
        await adminStatement(server, `CREATE DATABASE ${name}`)
        cleanup = () => void adminStatement(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        env = { KINTSUGI_URL: NO_SERVER, DATABASE_URL: withDatabase(server, name) }
        const refused = await users(cwd, ["list"], env)
        expect({ code: refused.code, err: refused.err }).toEqual({
          code: 1,
          err: "kintsugi users: the database at DATABASE_URL holds no kintsugi installation (no users table); run `kintsugi migrate` or `kintsugi serve` for it first\n"
        })
        const migrate = Bun.spawnSync(["bun", CLI, "migrate"], { cwd, env: { PATH: process.env["PATH"] ?? "", HOME, ...env } })
        expect(migrate.exitCode).toBe(0)
      } else {
        const dir = await createTestDataDir()
        cleanup = dir.cleanup
        env = { KINTSUGI_URL: NO_SERVER, KINTSUGI_DATA_DIR: dirname(dir.dataDir) }
      }
      expect(
        (await users(cwd, ["add", "local-admin", "--grant", "agents.manage", "--grant", "providers.manage"], env, `${PASSWORD}\n`)).code
      ).toBe(0)
      const listed = await users(cwd, ["list"], env)
      expect(listed.out.split(/\s+/).slice(0, 3)).toEqual(["local-admin", "agents.manage,providers.manage", "enabled"])
      expect(readdirSync(cwd)).toEqual([])
    } finally {
      cleanup()
      rmSync(cwd, { recursive: true, force: true })
    }
  })
})
