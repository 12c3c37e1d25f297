/**
 * The pool's waiting child and the worker loops: once a loop waited in `whileIdle`, the child after a
 * take is started only while a loop waits for a job; a process whose every loop is busy starts none
 * ahead, and one starts as soon as a loop falls idle. Real children (src/cli.ts run-job --ahead).
 */
import { afterEach, expect, setDefaultTimeout, test } from "bun:test"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type JobChildrenShape, makeJobChildren } from "../../src/worker/child/JobChildren.ts"
import { until } from "../support/waitFor.ts"

setDefaultTimeout(60_000)

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const createPool = async (): Promise<JobChildrenShape> => {
  const cacheDir = mkdtempSync(join(tmpdir(), "kintsugi-children-idle-"))
  const scope = Effect.runSync(Scope.make())
  const children = await Effect.runPromise(
    Scope.extend(makeJobChildren({ cacheDir, bundle: false, prestart: "always", refillWhen: "ended" }), scope)
  )
  cleanups.push(
    () => Effect.runPromise(Scope.close(scope, Exit.void)),
    () => rmSync(cacheDir, { recursive: true, force: true })
  )
  return children
}

const waitingPid = (children: JobChildrenShape): Promise<number> =>
  until(() => Effect.runPromise(children.waiting), { what: "a waiting job child", timeoutMs: 30_000 })

/** A loop waiting in `whileIdle` until the returned `wake` is called. */
const idleLoop = async (children: JobChildrenShape) => {
  const woken = Effect.runSync(Deferred.make<void>())
  const fiber = Effect.runFork(children.whileIdle(Deferred.await(woken)))
  cleanups.push(() => Effect.runPromise(Fiber.interrupt(fiber)))
  await Effect.runPromise(Effect.yieldNow())
  return { wake: () => Effect.runPromise(Effect.zipRight(Deferred.succeed(woken, undefined), Fiber.join(fiber))) }
}

test("every loop busy: the next child is not started ahead after a job; a loop falling idle starts it", async () => {
  const children = await createPool()
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
  const children = await createPool()
  const first = await waitingPid(children)
  await idleLoop(children)
  const taken = await Effect.runPromise(children.take)
  cleanups.push(() => void taken.child.kill("SIGKILL"))
  expect(taken.child.pid).toBe(first)
  expect(await Effect.runPromise(children.waiting)).toBeUndefined()
  taken.onEnded?.()
  expect(await waitingPid(children)).not.toBe(first)
})
