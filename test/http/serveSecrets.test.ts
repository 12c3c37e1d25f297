/**
 * Secrets hygiene of `kintsugi serve` (ARCHITECTURE §10): after start-up no secret is left in the
 * serving process's environment, the values still work (sign-in, the configured secret key), and the
 * process is non-dumpable, so a process of the same user cannot read its environ or memory.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test"
import { randomBytes } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { collectSecrets } from "../../src/cli/processSecrets.ts"
import { createTestDataDir } from "../support/db.ts"

setDefaultTimeout(90_000)

const CLI = path.join(import.meta.dir, "..", "..", "src", "cli.ts")
const cleanups: Array<() => void> = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

const freePort = () => {
  const s = Bun.serve({ port: 0, fetch: () => new Response() })
  const port = s.port ?? 0
  void s.stop(true)
  return port
}

/** Starts `kintsugi serve` on a copy of the migrated template and waits for its "serving on" line. */
const startServe = async (env: Record<string, string>, prefix: ReadonlyArray<string> = []) => {
  const { dataDir, cleanup } = await createTestDataDir()
  const home = path.dirname(dataDir)
  // The serve process may run as another user (below): everything it needs must be reachable.
  fs.chmodSync(home, 0o777)
  fs.chmodSync(dataDir, 0o777)
  for (const entry of fs.readdirSync(dataDir, { recursive: true })) fs.chmodSync(path.join(dataDir, String(entry)), 0o777)
  const port = freePort()
  const proc = Bun.spawn([...prefix, process.execPath, CLI, "serve"], {
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: home,
      KINTSUGI_DATA_DIR: home,
      PORT: String(port),
      KINTSUGI_WORKERS: "0",
      ...env
    },
    stdout: "pipe",
    stderr: "pipe"
  })
  cleanups.push(() => {
    proc.kill("SIGKILL")
    cleanup()
  })
  const decoder = new TextDecoder()
  let seen = ""
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk)
    if (seen.includes("serving on")) break
  }
  if (!seen.includes("serving on")) throw new Error(`serve did not start: ${seen}${await new Response(proc.stderr).text()}`)
  return { proc, port, home, seen }
}

const environOf = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, "utf8")

describe("kintsugi serve: secrets hygiene", () => {
  test("no secret stays in /proc/<pid>/environ; the values still work and the key file is not generated", async () => {
    const password = `admin-canary-${randomBytes(8).toString("hex")}`
    const key = `key-canary-${randomBytes(8).toString("hex")}`
    const { proc, port, home } = await startServe({ KINTSUGI_ADMIN_PASSWORD: password, KINTSUGI_SECRET_KEY: key })
    const environ = environOf(proc.pid) // the same pid: re-executed in place
    expect(environ).not.toContain(password)
    expect(environ).not.toContain(key)
    expect(environ).not.toContain("KINTSUGI_ADMIN_PASSWORD")
    expect(environ).toContain(`PORT=${port}`)
    // The password reached the server: the first admin signs in with it.
    const signIn = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password })
    })
    expect(signIn.status).toBe(200)
    // The configured key was used: no key file was generated in the data dir.
    expect(fs.existsSync(path.join(home, "secret.key"))).toBe(false)
    // The environment names only the descriptor of the pipe that carried the values, now closed.
    const fd = /KINTSUGI_SECRETS_FD=(\d+)/.exec(environ)?.[1]
    expect(fd).toBeDefined()
    const link = fs.existsSync(`/proc/${proc.pid}/fd/${fd}`) ? fs.readlinkSync(`/proc/${proc.pid}/fd/${fd}`) : "closed"
    expect(link.startsWith("pipe:")).toBe(false)
  })

  test("secrets given as <NAME>_FILE are read from the file and never enter the environment", async () => {
    const password = `file-canary-${randomBytes(8).toString("hex")}`
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kintsugi-secret-")), "admin-password")
    fs.writeFileSync(file, `${password}\n`, { mode: 0o644 })
    cleanups.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }))
    const { proc, port } = await startServe({ KINTSUGI_ADMIN_PASSWORD_FILE: file })
    expect(environOf(proc.pid)).not.toContain(password)
    const signIn = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password })
    })
    expect(signIn.status).toBe(200)
  })

  const asNobody = process.getuid?.() === 0 && Bun.which("setpriv") !== null
  test.skipIf(!asNobody)("non-dumpable: a process of the same (non-root) user cannot read its environ or memory", async () => {
    const nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    const { proc } = await startServe({ KINTSUGI_ADMIN_PASSWORD: "a long enough canary password" }, nobody)
    // A non-dumpable process's /proc files belong to root, not to its own user.
    expect(fs.statSync(`/proc/${proc.pid}/environ`).uid).toBe(0)
    for (const file of ["environ", "mem"]) {
      const reader = Bun.spawnSync([...nobody, "head", "-c", "64", `/proc/${proc.pid}/${file}`], { stdout: "pipe", stderr: "pipe" })
      expect(reader.exitCode).not.toBe(0)
      expect(reader.stderr.toString()).toContain("Permission denied")
    }
  })

  test("collectSecrets: a variable wins over its _FILE; empty values are ignored; one trailing newline is dropped", () => {
    const files: Record<string, string> = { "/k": "from-file\n\n", "/d": "postgres://u:p@h/db\n" }
    const got = collectSecrets(
      {
        KINTSUGI_SECRET_KEY_FILE: "/k",
        KINTSUGI_ADMIN_PASSWORD: "",
        KINTSUGI_ADMIN_PASSWORD_FILE: "",
        DATABASE_URL: "direct",
        DATABASE_URL_FILE: "/d"
      },
      (p) => files[p] ?? ""
    )
    expect(Object.fromEntries(got)).toEqual({ KINTSUGI_SECRET_KEY: "from-file\n", DATABASE_URL: "direct" })
  })
})
