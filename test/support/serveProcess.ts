/**
 * A real `kintsugi serve` child process on a copy of the migrated template data dir, for tests that
 * attack the running system from outside: its stdout and stderr are collected whole, users are made
 * with the real CLI before it starts (the embedded database admits one process at a time).
 */
import path from "node:path"
import { createTestDataDir } from "./db.ts"

export const CLI = path.join(import.meta.dir, "..", "..", "src", "cli.ts")

export interface ServeProcess {
  readonly proc: ReturnType<typeof Bun.spawn>
  readonly port: number
  readonly origin: string
  /** Everything the process printed so far (stdout and stderr together). */
  readonly output: () => string
  /**
   * Resolves with the output once `until` holds for it (checked as each chunk arrives); rejects when
   * the process exits first, or after `timeoutMs` (an upper bound only).
   */
  readonly waitFor: (what: string, until: (output: string) => boolean, timeoutMs?: number) => Promise<string>
  /** SIGTERM, then waits for the exit (the embedded database is released). */
  readonly stop: () => Promise<void>
}

const freePort = () => {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
  const port = s.port ?? 0
  void s.stop(true)
  return port
}

/** A copy of the migrated template: `home` is KINTSUGI_DATA_DIR (the database lives in `home/data`). */
export const createServeHome = async (): Promise<{ readonly home: string; readonly cleanup: () => void }> => {
  const { dataDir, cleanup } = await createTestDataDir()
  return { home: path.dirname(dataDir), cleanup }
}

/** Runs `kintsugi <args>` to its end with `env`; rejects with its output when it fails. */
export const runCli = async (args: ReadonlyArray<string>, env: Record<string, string>): Promise<string> => {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`kintsugi ${args.join(" ")} exited ${code}: ${out}${err}`)
  return out + err
}

/** Starts `kintsugi serve` with exactly `env` (plus PORT) and waits for its "serving on" line. */
export const startServe = async (
  env: Record<string, string>,
  options: { readonly wrap?: (argv: Array<string>) => Array<string> } = {}
): Promise<ServeProcess> => {
  const port = freePort()
  const argv = [process.execPath, CLI, "serve"]
  const proc = Bun.spawn(options.wrap?.(argv) ?? argv, {
    env: { ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe"
  })
  let text = ""
  const waiters = new Set<() => void>()
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      for (const check of waiters) check()
    }
  }
  const pumps = Promise.all([pump(proc.stdout), pump(proc.stderr)])
  const waitFor = (what: string, until: (output: string) => boolean, timeoutMs = 120_000) =>
    new Promise<string>((resolve, reject) => {
      const done = (settle: () => void) => {
        waiters.delete(check)
        clearTimeout(timer)
        settle()
      }
      const check = () => {
        if (until(text)) done(() => resolve(text))
      }
      const timer = setTimeout(() => done(() => reject(new Error(`gave up waiting for ${what}: ${text}`))), timeoutMs)
      waiters.add(check)
      check()
      void pumps.then(() => {
        if (waiters.has(check)) done(() => reject(new Error(`serve ended before ${what}: ${text}`)))
      })
    })
  const serving = waitFor("its serving line", (t) => t.includes("serving on"), 600_000)
  const exited = proc.exited.then((code) => {
    throw new Error(`serve exited (${code}) before serving: ${text}`)
  })
  await Promise.race([serving, exited])
  exited.catch(() => undefined)
  return {
    proc,
    port,
    origin: `http://127.0.0.1:${port}`,
    output: () => text,
    waitFor,
    stop: async () => {
      proc.kill("SIGTERM")
      await proc.exited
      await pumps
    }
  }
}

/** Signs in to a serve process at `origin` through the API and issues an API token (a day long) with that session: its secret. */
export const issueApiToken = async (origin: string, username: string, password: string, name: string): Promise<string> => {
  const sameSite = { origin, "sec-fetch-site": "same-origin" }
  const session = await fetch(`${origin}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...sameSite },
    body: JSON.stringify({ username, password })
  })
  if (session.status !== 200) throw new Error(`signing in as ${username}: ${session.status} ${await session.text()}`)
  const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const csrf = ((await session.json()) as { user: { csrfToken: string } }).user.csrfToken
  const issued = await fetch(`${origin}/api/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie, "x-csrf-token": csrf, ...sameSite },
    body: JSON.stringify({ name, expiresInDays: 1 })
  })
  if (issued.status !== 201) throw new Error(`issuing a token for ${username}: ${issued.status} ${await issued.text()}`)
  return ((await issued.json()) as { secret: string }).secret
}

/** The provider `scripted` (OpenAI-compatible, one model `m`) at `baseUrl`, added through the API of the serve process at `origin`. */
export const addScriptedProvider = async (origin: string, token: string, baseUrl: string, apiKey: string): Promise<void> => {
  const r = await fetch(`${origin}/api/admin/providers`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      kind: "custom",
      id: "scripted",
      api: "openai-completions",
      baseUrl,
      apiKey,
      models: [{ id: "m", contextWindow: 100_000, maxTokens: 4000 }]
    })
  })
  if (r.status !== 201) throw new Error(`adding the scripted provider: ${r.status} ${await r.text()}`)
}
