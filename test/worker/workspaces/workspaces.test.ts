/**
 * The Workspaces service over a temporary job root: a folder from a .zip or .tar.gz laid out as
 * `<name>/src` + `<name>/out`; names, roots and existing folders refused; hostile archives refused with
 * nothing written; git URLs refused by the URL policy (http, file, ssh, git, scp-like, credentials,
 * private, loopback, metadata) before any connection; a real shallow clone over https from a local
 * `git http-backend`, its size cap, and a clone started in the background.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect, Exit, Layer, ManagedRuntime, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { zipSync } from "fflate"
import { writeZip } from "../../../src/agents/zip.ts"
import { JobRoots } from "../../../src/worker/JobRoots.ts"
import { layer, Workspaces, type WorkspacesOptions } from "../../../src/worker/workspaces/Workspaces.ts"
import type { Resolver } from "../../../src/net/urlPolicy.ts"
import { createTarGz } from "../../support/archives.ts"
import { startGitHttpsServer, type GitHttpsServer } from "../../support/gitHttpsServer.ts"
import { makeTestLayer } from "../../support/testLayer.ts"

setDefaultTimeout(60_000)

let root = ""
let git: GitHttpsServer

/** Names resolve as a stub says: `*.internal.example` to a private address, anything else to a public one. */
const resolve: Resolver = async (host) => (host.endsWith(".internal.example") ? ["192.168.1.10"] : ["93.184.215.14"])

const runtimeFor = (options: WorkspacesOptions = {}) =>
  ManagedRuntime.make(
    layer({ policy: { allow: false, resolve }, ...options }).pipe(
      Layer.provide(makeTestLayer(JobRoots)({ boundary: { jobRoots: [root], forbidden: [] } }))
    )
  )

let rt: ReturnType<typeof runtimeFor>
const run = <A, E>(f: (w: Workspaces["Type"]) => Effect.Effect<A, E>) => rt.runPromiseExit(Effect.flatMap(Workspaces, f))
const failureOf = async <A, E>(f: (w: Workspaces["Type"]) => Effect.Effect<A, E>): Promise<E> => {
  const exit = await run(f)
  if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error(`expected a failure, got ${String(exit)}`)
  return exit.cause.error
}
const rootEntries = () => readdirSync(root).sort()
const zipOf = (files: Record<string, string>) => writeZip(Object.entries(files).map(([path, content]) => ({ path, content })))

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-ws-root-")))
  rt = runtimeFor()
  git = await startGitHttpsServer()
}, 60_000)

afterAll(async () => {
  await rt?.dispose()
  await git?.stop()
  rmSync(root, { recursive: true, force: true })
})

describe("a workspace from an uploaded archive", () => {
  test(".zip: `<root>/<name>/src` holds the files (one shared top folder removed), `<name>/out` is empty; the list finds it", async () => {
    const exit = await run((w) =>
      w.fromArchive(
        { root, name: "shop" },
        { fileName: "shop.zip", bytes: zipOf({ "shop/src/a.ts": "export const a = 1\n", "shop/README.md": "# Shop\n" }) }
      )
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(readFileSync(join(root, "shop", "src", "src", "a.ts"), "utf8")).toBe("export const a = 1\n")
    expect(readFileSync(join(root, "shop", "src", "README.md"), "utf8")).toBe("# Shop\n")
    expect(readdirSync(join(root, "shop", "out"))).toEqual([])
    const listed = await rt.runPromise(Effect.flatMap(Workspaces, (w) => w.list))
    expect(listed).toContainEqual({
      name: "shop",
      jobRoot: root,
      path: join(root, "shop"),
      src: join(root, "shop", "src"),
      out: join(root, "shop", "out")
    })
  })

  test(".tar.gz: files and their execute bit", async () => {
    const bytes = createTarGz([
      { name: "./run.sh", content: "echo hi\n", mode: 0o755 },
      { name: "./lib/x.py", content: "x = 1\n" }
    ])
    expect(Exit.isSuccess(await run((w) => w.fromArchive({ root, name: "tools.v2" }, { fileName: "tools.tar.gz", bytes })))).toBe(true)
    expect(statSync(join(root, "tools.v2", "src", "run.sh")).mode & 0o777).toBe(0o755)
    expect(statSync(join(root, "tools.v2", "src", "lib", "x.py")).mode & 0o777).toBe(0o644)
  })

  test("names that are not a single safe folder, a root that is not a job root, and an existing folder are refused", async () => {
    const before = rootEntries()
    const bytes = zipOf({ "a.txt": "a" })
    for (const name of ["../escape", ".hidden", "a/b", "", "x".repeat(65), "-dash", "sp ace"]) {
      const e = await failureOf((w) => w.fromArchive({ root, name }, { fileName: "a.zip", bytes }))
      expect({ name, tag: e._tag, paths: e._tag === "WorkspaceInvalid" ? e.problems.map((p) => p.path) : [] }).toEqual({
        name,
        tag: "WorkspaceInvalid",
        paths: ["name"]
      })
    }
    const elsewhere = await failureOf((w) => w.fromArchive({ root: tmpdir(), name: "fine" }, { fileName: "a.zip", bytes }))
    expect(elsewhere).toMatchObject({
      _tag: "WorkspaceInvalid",
      problems: [{ path: "root", message: "is not one of this server's job roots" }]
    })
    expect(rootEntries()).toEqual(before)
    // Something of that name exists: refused, and left exactly as it was.
    mkdirSync(join(root, "taken"))
    writeFileSync(join(root, "taken", "keep.txt"), "mine")
    expect(await failureOf((w) => w.fromArchive({ root, name: "taken" }, { fileName: "a.zip", bytes }))).toMatchObject({
      _tag: "WorkspaceExists",
      name: "taken"
    })
    expect(readdirSync(join(root, "taken"))).toEqual(["keep.txt"])
    writeFileSync(join(root, "a-file"), "")
    expect(await failureOf((w) => w.fromArchive({ root, name: "a-file" }, { fileName: "a.zip", bytes }))).toMatchObject({
      _tag: "WorkspaceExists"
    })
  })

  test("hostile archives: slip, absolute paths, symlinks, bombs by ratio and by size; nothing is written", async () => {
    const before = rootEntries()
    const refused = async (fileName: string, bytes: Uint8Array, options: WorkspacesOptions = {}) => {
      const own = runtimeFor(options)
      const exit = await own.runPromiseExit(
        Effect.flatMap(Workspaces, (w) => w.fromArchive({ root, name: "hostile" }, { fileName, bytes }))
      )
      await own.dispose()
      if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail" || exit.cause.error._tag !== "WorkspaceInvalid")
        throw new Error(`not refused: ${String(exit)}`)
      return exit.cause.error.problems.map((p) => `${p.path}: ${p.message}`)
    }
    // ZIP: names are checked in the central directory before anything is inflated.
    expect(await refused("slip.zip", zipOf({ "../../outside.txt": "x", "ok.txt": "y" }))).toEqual([
      "archive: ../../outside.txt: `..` segments are not allowed"
    ])
    expect(await refused("abs.zip", zipOf({ "/etc/cron.d/evil": "x" }))).toEqual([
      "archive: /etc/cron.d/evil: absolute paths are not allowed"
    ])
    const symlink = zipSync({ link: [new TextEncoder().encode("/etc/passwd"), { os: 3, attrs: (0o120777 << 16) >>> 0 }] })
    expect(await refused("link.zip", symlink)).toEqual(["archive: link: symbolic links are not allowed (add the file itself)"])
    const zeros = zipSync({ "zeros.bin": [new Uint8Array(8 * 1024 * 1024), { level: 9 }] })
    expect(await refused("bomb.zip", zeros)).toEqual(["archive: (zip): compression ratio above 100:1 (a ZIP bomb?)"])
    const noise = zipSync({ "a.bin": [randomBytes(200 * 1024), { level: 0 }], "b.bin": [randomBytes(200 * 1024), { level: 0 }] })
    expect(await refused("big.zip", noise, { archiveCaps: { maxTotalBytes: 300 * 1024 } })).toEqual([
      "archive: (zip): entries declare 409600 bytes in total, more than 307200"
    ])
    // .tar.gz: the same rules while streaming.
    expect(await refused("slip.tar.gz", createTarGz([{ name: "../x", content: "x" }]))).toEqual([
      "archive: ../x: `..` segments are not allowed"
    ])
    expect(await refused("abs.tgz", createTarGz([{ name: "/root/.ssh/authorized_keys", content: "x" }]))).toEqual([
      "archive: /root/.ssh/authorized_keys: absolute paths are not allowed"
    ])
    expect(
      await refused(
        "link.tar.gz",
        createTarGz([
          { name: "src", type: "2", linkname: "/etc" },
          { name: "src/passwd", content: "x" }
        ])
      )
    ).toEqual(["archive: src: symbolic links are not allowed (add the file itself)"])
    expect(await refused("bomb.tar.gz", createTarGz([{ name: "zeros.bin", content: new Uint8Array(8 * 1024 * 1024) }]))).toEqual([
      "archive: (archive): compression ratio above 100:1 (a gzip bomb?)"
    ])
    expect(
      await refused("big.tar.gz", createTarGz([{ name: "a.bin", content: randomBytes(400 * 1024) }]), {
        archiveCaps: { maxFileBytes: 300 * 1024 }
      })
    ).toEqual(["archive: a.bin: is larger than 307200 bytes"])
    // The name and the content disagree; a file where a folder must be.
    expect(await refused("fake.zip", createTarGz([{ name: "a", content: "x" }]))).toEqual([
      "archive: (archive): is named .zip but its content is not one"
    ])
    expect(await refused("clash.zip", zipOf({ a: "file", "a/b.txt": "inside" }))).toEqual([
      'archive: a/b.txt: lies inside "a", which is a file'
    ])
    expect(await refused("notes.txt", zipOf({ a: "x" }))).toEqual(["archive: (archive): must be a .zip or .tar.gz file"])
    expect(rootEntries()).toEqual(before)
  })
})

describe("a workspace from a git URL", () => {
  test("the URL policy refuses every non-https, credentialed, private, loopback or metadata URL before connecting", async () => {
    const before = rootEntries()
    const local = await git.addRepository("refused", { "a.txt": "a\n" })
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["http://github.com/owner/repo.git", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["file:///etc", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["ssh://git@github.com/owner/repo.git", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["git://github.com/owner/repo.git", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["git@github.com:owner/repo.git", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["ext::sh -c touch% /tmp/pwned", "must be an https:// URL (http, ssh, git, file and host:path addresses are refused)"],
      ["https://user:token@github.com/owner/repo.git", "must not carry a user name or password (only public repositories can be cloned)"],
      ["https://github.com@evil.example/repo.git", "must not carry a user name or password (only public repositories can be cloned)"],
      ["https://10.0.0.5/repo.git", "resolves to a non-public address (10.0.0.5 is a private address)"],
      ["https://git.internal.example/repo.git", "resolves to a non-public address (192.168.1.10 is a private address)"],
      ["https://169.254.169.254/latest/meta-data", "resolves to a non-public address (169.254.169.254 is a link-local address)"],
      ["https://metadata.google.internal/x.git", "points at a local or metadata host"],
      ["https://localhost/repo.git", "points at a local or metadata host"],
      ["https://[::ffff:127.0.0.1]/repo.git", "resolves to a non-public address (::ffff:7f00:1 embeds 127.0.0.1, a loopback address)"],
      [local, "resolves to a non-public address (127.0.0.1 is a loopback address)"],
      ["", "is required"]
    ]
    for (const [url, message] of cases) {
      const e = await failureOf((w) => w.fromGit({ root, name: "cloned" }, url))
      expect({ url, e }).toMatchObject({ url, e: { _tag: "WorkspaceInvalid", problems: [{ path: "url", message }] } })
    }
    // Every problem at once: a bad name and a bad URL.
    expect(await failureOf((w) => w.fromGit({ root, name: "../x" }, "http://x"))).toMatchObject({
      _tag: "WorkspaceInvalid",
      problems: [{ path: "name" }, { path: "url" }]
    })
    expect(git.requests).toEqual([])
    expect(rootEntries()).toEqual(before)
  })

  test("a shallow clone over https into `<name>/src`, no credentials, hooks or templates kept", async () => {
    const url = await git.addRepository("tiny", { "README.md": "# Tiny\n", "lib/a.ts": "export const a = 1\n" })
    const own = runtimeFor({ policy: { allow: "loopback", resolve, caFile: git.caFile } })
    const folder = await own.runPromise(Effect.flatMap(Workspaces, (w) => w.fromGit({ root, name: "tiny" }, url)))
    await own.dispose()
    expect(folder.src).toBe(join(root, "tiny", "src"))
    expect(readFileSync(join(folder.src, "lib", "a.ts"), "utf8")).toBe("export const a = 1\n")
    expect(readdirSync(folder.out)).toEqual([])
    expect(existsSync(join(folder.src, ".git", "shallow"))).toBe(true)
    const config = readFileSync(join(folder.src, ".git", "config"), "utf8")
    expect(config).toContain(`url = ${url}`)
    expect(config).not.toMatch(/credential|hooksPath|sslCAInfo/)
    // No template: not even sample hooks.
    expect(existsSync(join(folder.src, ".git", "hooks"))).toBe(false)
  })

  test("a symlink in the repository is checked out as a plain file holding its target", async () => {
    const url = await git.addRepository("linked", { "a.txt": "a\n", passwd: { symlink: "/etc/passwd" } })
    const own = runtimeFor({ policy: { allow: "loopback", resolve, caFile: git.caFile } })
    const folder = await own.runPromise(Effect.flatMap(Workspaces, (w) => w.fromGit({ root, name: "linked" }, url)))
    await own.dispose()
    expect(lstatSync(join(folder.src, "passwd")).isSymbolicLink()).toBe(false)
    expect(readFileSync(join(folder.src, "passwd"), "utf8")).toBe("/etc/passwd")
  })

  test("a repository over the size cap is refused and leaves nothing behind", async () => {
    const url = await git.addRepository("heavy", { "noise.bin": randomBytes(3 * 1024 * 1024) })
    const own = runtimeFor({ policy: { allow: "loopback", resolve, caFile: git.caFile }, clone: { maxMb: 1 } })
    const exit = await own.runPromiseExit(Effect.flatMap(Workspaces, (w) => w.fromGit({ root, name: "heavy" }, url)))
    await own.dispose()
    expect(exit).toMatchObject({
      _tag: "Failure",
      cause: { error: { _tag: "WorkspaceCloneFailed", problem: "the repository is larger than 1 MiB" } }
    })
    expect(existsSync(join(root, "heavy"))).toBe(false)
  })

  test("a server that does not answer: the clone ends at its time cap and leaves nothing behind", async () => {
    const own = runtimeFor({ policy: { allow: "loopback", resolve, caFile: git.caFile }, clone: { timeoutSec: 1 } })
    const exit = await own.runPromiseExit(Effect.flatMap(Workspaces, (w) => w.fromGit({ root, name: "stalled" }, git.stalledUrl)))
    await own.dispose()
    expect(exit).toMatchObject({
      _tag: "Failure",
      cause: { error: { _tag: "WorkspaceCloneFailed", problem: "the clone did not finish within 1 s" } }
    })
    expect(existsSync(join(root, "stalled"))).toBe(false)
  })

  test("started in the background: claimed at once, listed when done; a failed clone is shown and removed", async () => {
    const url = await git.addRepository("later", { "a.txt": "a\n" })
    const own = runtimeFor({ policy: { allow: "loopback", resolve, caFile: git.caFile } })
    const svc = await own.runPromise(Workspaces)
    const folder = await own.runPromise(svc.startClone({ root, name: "later" }, url))
    expect(existsSync(folder.path)).toBe(true)
    // A second request for the name is refused while the first one clones.
    expect(await own.runPromiseExit(svc.startClone({ root, name: "later" }, url))).toMatchObject({
      _tag: "Failure",
      cause: { error: { _tag: "WorkspaceExists" } }
    })
    const settled = (s: ReadonlyArray<{ readonly name: string }>) => !s.some((c) => c.name === "later")
    await own.runPromise(Effect.repeat(svc.clones, { until: settled, schedule: Schedule.spaced("50 millis") }))
    expect((await own.runPromise(svc.list)).map((w) => w.name)).toContain("later")
    await own.runPromise(svc.startClone({ root, name: "missing" }, `${git.origin}/no-such-repo.git`))
    await own.runPromise(
      Effect.repeat(svc.clones, {
        until: (s) => s.some((c) => c.name === "missing" && c.failure !== undefined),
        schedule: Schedule.spaced("50 millis")
      })
    )
    const failed = await own.runPromise(svc.clones)
    expect(failed.find((c) => c.name === "missing")?.failure).toMatch(/^git clone failed: .*not found/i)
    expect(existsSync(join(root, "missing"))).toBe(false)
    await own.dispose()
  })
})
