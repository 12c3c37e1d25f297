/**
 * The worker's job children: one child started ahead waits for its envelope, a job takes it
 * and the next one is started; every job gets a fresh child that never had an envelope before, and the
 * waiting child holds no secret (scrubbed environment, no envelope yet). Real children (src/cli.ts
 * run-job), real pi-ai clients against a scripted model server.
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import type { JobEvent } from "../../src/contract/JobEvent.ts"
import { JOB_CHILD_JIT_ENV } from "../../src/jobChild/args.ts"
import { WORKER_NAMES } from "../../src/tools/grepPool.ts"
import { makeJobChildren, type JobChildrenShape } from "../../src/worker/child/JobChildren.ts"
import { childEnvironment, CLI_PATH, runJobProcess } from "../../src/worker/child/JobProcess.ts"
import { findBundle, sourceKey } from "../../src/worker/child/jobChildBundle.ts"
import { createEnvelope, createJob, createJobDirs, createProvider, TEST_API_KEY } from "../support/jobChild.ts"
import { startOpenAIServer } from "../support/scriptedServers.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(120_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const pool = async (refillWhen: "started" | "ended" = "started", sandboxProbed?: string): Promise<JobChildrenShape> => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-"))
  const scope = Effect.runSync(Scope.make())
  const children = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "always", refillWhen, sandboxProbed }), scope)
  )
  cleanups.push(
    () => Effect.runPromise(Scope.close(scope, Exit.void)),
    () => rmSync(cacheDir, { recursive: true, force: true })
  )
  return children
}

const waitingPid = (children: JobChildrenShape): Promise<number> =>
  until(() => Effect.runPromise(children.waiting), { what: "a waiting job child", timeoutMs: 30_000 })

/** Whether `pid` has a handler for SIGTERM (bit 15 of SigCgt): the child's exit guard is armed. */
const catchesSigterm = (pid: number): boolean => {
  const hex = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1]
  return hex !== undefined && (BigInt(`0x${hex}`) & (1n << 14n)) !== 0n
}

const alive = (pid: number) => {
  try {
    return !readFileSync(`/proc/${pid}/stat`, "latin1").includes(") Z ")
  } catch {
    return false
  }
}

test("a job takes the waiting child, the next job a fresh one: never a child twice, no state from the earlier job", async () => {
  const server = await startOpenAIServer([
    { kind: "turn", text: "first answer" },
    { kind: "turn", text: "second answer" }
  ])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const children = await pool()

  const run = async (task: string, metadata: Record<string, string>) => {
    const pids: Array<number> = []
    const events: Array<JobEvent> = []
    const take = Effect.tap(children.take, (s) => Effect.sync(() => void pids.push(s.child.pid)))
    const settlement = await Effect.runPromise(
      runJobProcess(
        createEnvelope(createJob(dirs, { task, metadata }), [createProvider(server, "openai-completions")]) as Parameters<
          typeof runJobProcess
        >[0],
        {
          onEvent: (e) => Effect.sync(() => void events.push(e)),
          abortRequested: Effect.succeed(false),
          log: () => Effect.void
        },
        take
      )
    )
    return { settlement, events, pid: pids[0] ?? -1 }
  }

  const first = await waitingPid(children)
  const one = await run("the first task", { trigger: "one" })
  expect(one.pid).toBe(first) // the child started ahead took the job
  expect(one.settlement).toEqual({ status: "completed", summary: "first answer" })
  expect(alive(first)).toBe(false) // it served one job and ended

  const second = await waitingPid(children)
  expect(second).not.toBe(first)
  const two = await run("the second task", { trigger: "two" })
  expect(two.pid).toBe(second)
  expect(two.settlement).toEqual({ status: "completed", summary: "second answer" })
  // A fresh process: its events start at seq 0 with its own job, and the model saw only its own task.
  expect(two.events[0]).toMatchObject({ type: "job.started", seq: 0, metadata: { trigger: "two" } })
  expect(two.events.map((e) => e.seq)).toEqual(two.events.map((_, i) => i))
  // Only the two jobs reached the model: the waiting children's warm-up rehearsals make no request.
  expect(server.requests.length).toBe(2)
  const body = server.requests[1]?.rawBody ?? ""
  expect(body).toContain("the second task")
  expect(body).not.toContain("the first task")
  expect(body).not.toContain("first answer")
})

test("the waiting child holds no secret: a scrubbed environment, no envelope, nothing of the server's; its JIT settings are the job child's, not the server's", async () => {
  process.env["KINTSUGI_SECRET_KEY"] = "waiting-child-must-not-see-this"
  process.env["DATABASE_URL"] = "postgres://secret@127.0.0.1/none"
  process.env["BUN_JSC_thresholdForJITSoon"] = "1"
  cleanups.push(() => {
    delete process.env["KINTSUGI_SECRET_KEY"]
    delete process.env["DATABASE_URL"]
    delete process.env["BUN_JSC_thresholdForJITSoon"]
  })
  const children = await pool()
  const pid = await waitingPid(children)
  // Read once it waits for its envelope (its exit guard is armed), not mid-exec.
  await until(() => catchesSigterm(pid), { what: "the waiting child's exit guard (SIGTERM caught)" })
  const environ = readFileSync(`/proc/${pid}/environ`, "latin1")
    .split("\0")
    .filter((e) => e !== "")
  const names = environ.map((e) => e.slice(0, e.indexOf("=")))
  expect(names).not.toContain("KINTSUGI_SECRET_KEY")
  expect(names).not.toContain("DATABASE_URL")
  expect(environ.join("\n")).not.toContain(TEST_API_KEY)
  expect(names).toContain("KINTSUGI_RUN_PREFIX")
  // The job child's own variables (JobProcess.ts's list, as this environment sets them), the pool's and the JIT's.
  const allowed = [
    ...Object.keys(await Effect.runPromise(childEnvironment)),
    "BUN_RUNTIME_TRANSPILER_CACHE_PATH",
    "KINTSUGI_RUN_PREFIX",
    ...Object.keys(JOB_CHILD_JIT_ENV)
  ]
  expect(names.filter((n) => !allowed.includes(n))).toEqual([])
  for (const [name, value] of Object.entries(JOB_CHILD_JIT_ENV)) expect(environ).toContain(`${name}=${value}`)
})

/** The command line of `pid` after the script (`run-job`, or `run-job --ahead`), once it has exec'd. */
const runJobArgsOf = (pid: number): Promise<Array<string>> =>
  until(
    () => {
      const args = readFileSync(`/proc/${pid}/cmdline`, "latin1")
        .split("\0")
        .filter((a) => a !== "")
        .slice(2)
      return args[0] === "run-job" && args
    },
    { what: `process ${pid} to exec run-job` }
  )

test("the waiting child is started ahead (it warms up while it waits); a take that finds none starts a child without", async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-"))
  cleanups.push(() => rmSync(cacheDir, { recursive: true, force: true }))
  const scope = Effect.runSync(Scope.make())
  cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  const ahead = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "always", refillWhen: "started" }), scope)
  )
  expect(await runJobArgsOf(await waitingPid(ahead))).toEqual(["run-job", "--ahead"])
  const none = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "never", refillWhen: "started" }), scope)
  )
  const taken = await Effect.runPromise(none.take)
  cleanups.push(() => void taken.child.kill("SIGKILL"))
  expect(await runJobArgsOf(taken.child.pid)).toEqual(["run-job"])
})

test("closing the pool kills the waiting child", async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-"))
  cleanups.push(() => rmSync(cacheDir, { recursive: true, force: true }))
  const scope = Effect.runSync(Scope.make())
  const children = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "always", refillWhen: "started" }), scope)
  )
  const pid = await waitingPid(children)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await until(() => !alive(pid), { what: `the waiting child ${pid} to die` })
  expect(alive(pid)).toBe(false)
})

test("serve's pool (firstAfter) starts no child during start-up, one after the delay; a job taken before starts its own", async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-"))
  const scope = Effect.runSync(Scope.make())
  cleanups.push(
    () => Effect.runPromise(Scope.close(scope, Exit.void)),
    () => rmSync(cacheDir, { recursive: true, force: true })
  )
  const made = performance.now()
  const children = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "always", refillWhen: "started", firstAfter: "1500 millis" }), scope)
  )
  expect(await Effect.runPromise(children.waiting)).toBeUndefined()
  const own = await Effect.runPromise(children.take)
  cleanups.push(() => own.child.kill("SIGKILL"))
  expect(alive(own.child.pid)).toBe(true)
  const pid = await waitingPid(children)
  expect(pid).not.toBe(own.child.pid)
  expect(performance.now() - made).toBeGreaterThanOrEqual(1400)
})

test("unconfined (refill when the job ended): no next child loads while a job runs, one is waiting after", async () => {
  const server = await startOpenAIServer([{ kind: "turn", text: "done" }])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const children = await pool("ended")
  const first = await waitingPid(children)
  const waitingDuringJob: Array<number | undefined> = []
  const settlement = await Effect.runPromise(
    runJobProcess(
      createEnvelope(createJob(dirs), [createProvider(server, "openai-completions")]) as Parameters<typeof runJobProcess>[0],
      {
        onEvent: () => Effect.flatMap(children.waiting, (pid) => Effect.sync(() => void waitingDuringJob.push(pid))),
        abortRequested: Effect.succeed(false),
        log: () => Effect.void
      },
      children.take
    )
  )
  expect(settlement.status).toBe("completed")
  expect(waitingDuringJob.length).toBeGreaterThan(1)
  expect(waitingDuringJob.every((pid) => pid === undefined)).toBe(true)
  const next = await waitingPid(children)
  expect(next).not.toBe(first)
})

test("the pool's own probe answer reaches its children (KINTSUGI_SANDBOX_PROBED), and nothing else of the pool's sandbox", async () => {
  const environ = async (children: JobChildrenShape) => {
    const pid = await waitingPid(children)
    // Read once the child runs its own image (its exit guard is armed): before exec, /proc shows our environment.
    await until(() => catchesSigterm(pid), { what: "the waiting child's exit guard (SIGTERM caught)" })
    return readFileSync(`/proc/${pid}/environ`, "latin1")
      .split("\0")
      .filter((kv) => kv.startsWith("KINTSUGI_SANDBOX_PROBED="))
  }
  expect(await environ(await pool("started", "/usr/bin/bwrap"))).toEqual(["KINTSUGI_SANDBOX_PROBED=/usr/bin/bwrap"])
  expect(await environ(await pool("started"))).toEqual([])
})

/** The script a child runs (`bun <entry> run-job …`), once it has exec'd. */
const entryOf = (pid: number): Promise<string> =>
  until(
    () => {
      const args = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0")
      return args[2] === "run-job" && args[1]
    },
    { what: `process ${pid} to exec run-job` }
  )

/** The names of `pid`'s threads. */
const threadNames = (pid: number): Array<string> =>
  readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      return [readFileSync(`/proc/${pid}/task/${tid}/comm`, "latin1").trim()]
    } catch {
      return []
    }
  })

test("the waiting child of the sources is replaced by one of the bundle once the bundle is built; the bundle's warm-up starts grep's workers from the bundle", async () => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-"))
  // No bundle made at install either: the pool starts from the sources, and builds the bundle into cacheDir.
  const installCache = mkdtempSync(join(tmpdir(), "kintsugi-children-install-"))
  const scope = Effect.runSync(Scope.make())
  cleanups.push(
    () => Effect.runPromise(Scope.close(scope, Exit.void)),
    () => rmSync(cacheDir, { recursive: true, force: true }),
    () => rmSync(installCache, { recursive: true, force: true })
  )
  const children = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, installCache, bundle: true, prestart: "always", refillWhen: "started" }), scope)
  )
  const first = await waitingPid(children)
  expect(await entryOf(first)).toBe(CLI_PATH)
  // The build runs in a process of its own (a minute on a loaded machine); the pool looks for its result.
  const replaced = await until(
    async () => {
      const pid = await Effect.runPromise(children.waiting)
      return pid !== undefined && (await entryOf(pid)).endsWith("entry.js") && pid
    },
    { what: "a waiting child of the bundle", timeoutMs: 240_000 }
  )
  const bundle = await entryOf(replaced)
  expect(bundle).toBe(findBundle(cacheDir, sourceKey(), installCache) ?? "")
  expect(bundle.startsWith(cacheDir)).toBe(true)
  expect(replaced).not.toBe(first)
  await until(() => !alive(first), { what: `the replaced child ${first} to die` })
  expect(existsSync(join(dirname(bundle), "tools", "grepWorker.js.jsc"))).toBe(true)
  // Its warm-up started grep's workers, from the bundle's bytecode, never from the TypeScript sources.
  const names = await until(
    () => {
      const t = threadNames(replaced)
      return t.includes(WORKER_NAMES.bytecode) && t
    },
    { what: "grep's workers in the waiting child", timeoutMs: 60_000 }
  )
  expect(names).not.toContain(WORKER_NAMES.source)

  // A job's grep runs on those workers: the child is taken with them.
  const server = await startOpenAIServer([
    { kind: "turn", toolCalls: [{ name: "grep", arguments: { pattern: "export const" } }] },
    { kind: "turn", text: "found" }
  ])
  const dirs = createJobDirs({ "a.ts": "export const a = 1\n" })
  cleanups.push(
    () => server.stop(),
    () => dirs.cleanup()
  )
  const pids: Array<number> = []
  const settlement = await Effect.runPromise(
    runJobProcess(
      createEnvelope(createJob(dirs, { agent: { tools: ["grep"] } }), [createProvider(server, "openai-completions")]) as Parameters<
        typeof runJobProcess
      >[0],
      { onEvent: () => Effect.void, abortRequested: Effect.succeed(false), log: () => Effect.void },
      Effect.tap(children.take, (c) => Effect.sync(() => void pids.push(c.child.pid)))
    )
  )
  expect(pids).toEqual([replaced])
  expect(settlement).toEqual({ status: "completed", summary: "found" })
  expect(server.requests[1]?.rawBody).toContain("a.ts:1: export const a = 1")
})

// The waiting child and the worker loops: once a loop waited in `whileIdle`, the child after a take is
// started only while a loop waits for a job; a process whose every loop is busy starts none ahead, and
// one starts as soon as a loop falls idle.

/** A loop waiting in `whileIdle` until the returned `wake` is called. */
const idleLoop = async (children: JobChildrenShape) => {
  const woken = Effect.runSync(Deferred.make<void>())
  const fiber = Effect.runFork(children.whileIdle(Deferred.await(woken)))
  cleanups.push(() => Effect.runPromise(Fiber.interrupt(fiber)))
  await Effect.runPromise(Effect.yieldNow())
  return { wake: () => Effect.runPromise(Effect.zipRight(Deferred.succeed(woken, undefined), Fiber.join(fiber))) }
}

test("every loop busy: the next child is not started ahead after a job; a loop falling idle starts it", async () => {
  const children = await pool("ended")
  const first = await waitingPid(children)
  // The one loop waited, then was woken for a job: it takes the waiting child.
  await (await idleLoop(children)).wake()
  const taken = await Effect.runPromise(children.take)
  cleanups.push(() => void taken.child.kill("SIGKILL"))
  expect(taken.child.pid).toBe(first)
  // Its job is over while the loop is busy (settling, claiming the next): no child is started ahead.
  taken.onEnded?.()
  expect(await Effect.runPromise(children.waiting)).toBeUndefined()
  // The loop finds no job and waits: the next child starts.
  await idleLoop(children)
  expect(await waitingPid(children)).not.toBe(first)
})

test("a loop waiting when a job is over: the next child is started ahead then", async () => {
  const children = await pool("ended")
  const first = await waitingPid(children)
  await idleLoop(children)
  const taken = await Effect.runPromise(children.take)
  cleanups.push(() => void taken.child.kill("SIGKILL"))
  expect(taken.child.pid).toBe(first)
  expect(await Effect.runPromise(children.waiting)).toBeUndefined()
  taken.onEnded?.()
  expect(await waitingPid(children)).not.toBe(first)
})
