/**
 * A git server for clone tests: `git http-backend` (smart HTTP, shallow clones) behind Bun.serve with
 * TLS on 127.0.0.1, a self-signed certificate for that address made by openssl, and bare repositories
 * built from file maps. Every request is recorded.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"

export interface GitHttpsServer {
  /** `https://127.0.0.1:<port>` */
  readonly origin: string
  /** The certificate, for `http.sslCAInfo`. */
  readonly caFile: string
  /** Makes a bare repository `<name>.git` holding `files` (or symbolic links) in one commit; returns its URL. */
  readonly addRepository: (name: string, files: Record<string, string | Uint8Array | { readonly symlink: string }>) => Promise<string>
  readonly requests: ReadonlyArray<{ readonly method: string; readonly path: string }>
  /** A URL whose requests are never answered (until the server stops): a clone of it can only time out. */
  readonly stalledUrl: string
  readonly stop: () => Promise<void>
}

const run = async (argv: ReadonlyArray<string>, cwd: string) => {
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" }
  const p = Bun.spawn([...argv], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${out}${err}`)
}

/** The CGI answer of `git http-backend` as a Response (headers up to the blank line, then the body). */
const cgiResponse = (output: Uint8Array): Response => {
  const text = Buffer.from(output).toString("latin1")
  const end = text.search(/\r?\n\r?\n/)
  const head = end < 0 ? text : text.slice(0, end)
  const bodyStart = end < 0 ? output.length : end + (/^\r?\n\r?\n/.exec(text.slice(end))?.[0].length ?? 2)
  const headers = new Headers()
  let status = 200
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(":")
    if (colon < 0) continue
    const key = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    if (key.toLowerCase() === "status") status = Number(value.split(" ")[0])
    else headers.append(key, value)
  }
  return new Response(output.subarray(bodyStart), { status, headers })
}

export const startGitHttpsServer = async (): Promise<GitHttpsServer> => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-git-https-")))
  const repos = join(dir, "repos")
  mkdirSync(repos)
  const key = join(dir, "key.pem")
  const caFile = join(dir, "cert.pem")
  await run(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      caFile,
      "-days",
      "2",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1"
    ],
    dir
  )
  const requests: Array<{ method: string; path: string }> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(caFile), key: Bun.file(key) },
    fetch: async (request) => {
      const url = new URL(request.url)
      requests.push({ method: request.method, path: url.pathname })
      if (url.pathname.startsWith("/stalled.git")) return new Promise<Response>(() => undefined)
      const env: Record<string, string> = {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: repos,
        GIT_HTTP_EXPORT_ALL: "1",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: request.method,
        CONTENT_TYPE: request.headers.get("content-type") ?? "",
        REMOTE_ADDR: "127.0.0.1",
        ...(request.headers.get("git-protocol") === null ? {} : { GIT_PROTOCOL: request.headers.get("git-protocol") ?? "" }),
        ...(request.headers.get("content-encoding") === null
          ? {}
          : { HTTP_CONTENT_ENCODING: request.headers.get("content-encoding") ?? "" })
      }
      const body = new Uint8Array(await request.arrayBuffer())
      const p = Bun.spawn(["git", "http-backend"], { env, stdin: body, stdout: "pipe", stderr: "pipe" })
      const [out] = await Promise.all([new Response(p.stdout).bytes(), new Response(p.stderr).text(), p.exited])
      return cgiResponse(out)
    }
  })
  return {
    origin: `https://127.0.0.1:${server.port}`,
    caFile,
    requests,
    stalledUrl: `https://127.0.0.1:${server.port}/stalled.git`,
    addRepository: async (name, files) => {
      const work = join(dir, `work-${name}`)
      mkdirSync(work)
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(work, path)), { recursive: true })
        if (typeof content === "object" && "symlink" in content) symlinkSync(content.symlink, join(work, path))
        else writeFileSync(join(work, path), content)
      }
      await run(["git", "init", "-q", "-b", "main"], work)
      await run(["git", "add", "-A"], work)
      await run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"], work)
      await run(["git", "clone", "-q", "--bare", work, join(repos, `${name}.git`)], dir)
      return `https://127.0.0.1:${server.port}/${name}.git`
    },
    stop: async () => {
      await server.stop(true)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
