/**
 * The sandbox mounts what the job child checked at job start, not whatever the path names later:
 * another job (whose outDir is the parent of this job's workspace) can swap a read-only entry or the
 * outDir for a symlink between two shell calls; bubblewrap must not follow it into the data dir.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { existsSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createEnvelope, createJob, createJobDirs, createProvider, runJobChild, writeFile } from "../support/jobChild.ts"
import { BWRAP_SKIP_REASON, bwrapWorks } from "../support/sandbox.ts"
import { startOpenAIServer, type Step } from "../support/scriptedServers.ts"

setDefaultTimeout(60_000)

const dataDir = realpathSync(mkdtempSync(join(tmpdir(), "kintsugi-swapdata-")))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

const shellTurn = (command: string): Step => ({ kind: "turn", toolCalls: [{ name: "shell", arguments: { command } }] })

describe.skipIf(!bwrapWorks)(
  bwrapWorks ? "workspace paths swapped during the job" : `workspace paths swapped during the job (${BWRAP_SKIP_REASON})`,
  () => {
    test("a read-only entry or outDir replaced by a symlink to the data dir is not what the sandbox mounts", async () => {
      const KEY = `swap-canary-${crypto.randomUUID()}`
      writeFile(join(dataDir, "secret.key"), KEY)
      const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
      const server = await startOpenAIServer([
        // The handles are bwrap's only: a directory descriptor inside would lead out of the mount namespace.
        shellTurn("ls src out; echo FDS $(ls /proc/self/fd | tr '\\n' ' ')"),
        {
          kind: "fn",
          respond: () => {
            // What a second job with outDir = this job's root could do from inside its own sandbox.
            renameSync(dirs.src, `${dirs.src}.old`)
            symlinkSync(dataDir, dirs.src)
            renameSync(dirs.out, `${dirs.out}.old`)
            symlinkSync(dataDir, dirs.out)
            return shellTurn(`cat ${dirs.src}/secret.key; cat src/secret.key; echo planted > ${dirs.out}/planted.txt; ls -la src out`)
          }
        },
        { kind: "turn", text: "done" }
      ])
      try {
        const run = await runJobChild(
          createEnvelope(createJob(dirs, { agent: { tools: ["shell"] } }), [createProvider(server, "openai-completions")]),
          {
            env: { KINTSUGI_SANDBOX: "bwrap", KINTSUGI_ALLOW_UNCONFINED_ROOT: "" }
          }
        )
        expect(run.events.filter((e) => e.type === "tool.result").length).toBe(2)
        for (const r of server.requests) expect(r.rawBody.includes(KEY)).toBe(false)
        expect(server.requests[1]?.rawBody).toContain("FDS 0 1 2 3\\n")
        // The second call still saw the entries checked at job start.
        expect(server.requests[2]?.rawBody).toContain("a.ts")
        expect(run.stdout.includes(KEY)).toBe(false)
        expect(existsSync(join(dataDir, "planted.txt"))).toBe(false)
      } finally {
        await server.stop()
        dirs.cleanup()
      }
    })
  }
)
