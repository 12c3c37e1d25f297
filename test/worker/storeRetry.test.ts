/**
 * What the worker's writes try again (StoreError.retryTransient, on TestClock): a statement whose
 * connection failed or that the server refused for a while (a terminated backend, a full disk), up to
 * the budget; never one the server rejected for what it says (it would fail the same way again).
 */
import { expect, test } from "bun:test"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, Fiber, TestClock, TestContext } from "effect"
import { isDiskFull, isTransient, retryTransient, StoreUnavailable } from "../../src/db/StoreError.ts"

/** A StoreUnavailable whose driver error carries `code` as PostgreSQL's answer, or none (the connection failed). */
const unavailable = (code?: string, message = "Connection terminated unexpectedly") =>
  new StoreUnavailable({
    operation: "JobStore.appendEvents",
    cause: new SqlError({ cause: code === undefined ? new Error(message) : Object.assign(new Error(message), { severity: "FATAL", code }) })
  })

/** Runs `effect` (failing with `failures` in turn, then succeeding) under retryTransient on TestClock; the exit and the attempts. */
const attempt = (failures: ReadonlyArray<StoreUnavailable>, budgetMs: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      let attempts = 0
      const effect = Effect.suspend(() => {
        const failure = failures[attempts++]
        return failure === undefined ? Effect.succeed("stored") : Effect.fail(failure)
      })
      const fiber = yield* Effect.fork(retryTransient(budgetMs)(effect))
      for (let i = 0; i < 40 && fiber.unsafePoll() === null; i++) yield* TestClock.adjust("1 second")
      return { exit: yield* Fiber.await(fiber), attempts }
    }).pipe(Effect.provide(TestContext.TestContext))
  )

test("a lost connection, a terminated backend (57P01), a server starting up (57P03), a full disk (53100): tried again until stored", async () => {
  const { exit, attempts } = await attempt([unavailable(), unavailable("57P01"), unavailable("57P03"), unavailable("53100")], 15_000)
  expect(exit).toEqual(Exit.succeed("stored"))
  expect(attempts).toBe(5)
})

test("an answer that would come again (a constraint, bad input) is not tried again", async () => {
  for (const code of ["23505", "22P02", "42P01"]) {
    const failure = unavailable(code, "rejected")
    expect(isTransient(failure)).toBe(false)
    const { exit, attempts } = await attempt([failure], 15_000)
    expect(exit).toEqual(Exit.fail(failure))
    expect(attempts).toBe(1)
  }
})

test("still away past the budget: the last failure", async () => {
  const failures = Array.from({ length: 100 }, () => unavailable())
  const { exit, attempts } = await attempt(failures, 5_000)
  expect(Exit.isFailure(exit)).toBe(true)
  expect(attempts).toBeGreaterThan(2)
  expect(attempts).toBeLessThan(100)
})

test("a full disk is named: ENOSPC, SQLSTATE 53100, or the message", () => {
  expect(isDiskFull(unavailable("53100", "could not extend file"))).toBe(true)
  expect(isDiskFull(Object.assign(new Error("write failed"), { code: "ENOSPC" }))).toBe(true)
  expect(isDiskFull("PGlite failed inside a statement (No space left on device)")).toBe(true)
  expect(isDiskFull(unavailable("57P01", "terminating connection due to administrator command"))).toBe(false)
  expect(unavailable("53100", "could not extend file").message).toStartWith("disk full: ")
})
