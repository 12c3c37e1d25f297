/**
 * Exit codes for the `kintsugi` commands: a command ends with `exitWith(code)`; `teardown` maps the
 * main fiber's end to the process exit code (usage errors 2, Ctrl-C 130).
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** A command's non-zero exit code, after it has said why on stderr. */
export class CliExit extends Schema.TaggedError<CliExit>()("CliExit", { code: Schema.Number }) {}

/** Ends the command with `code` (0: success). */
export const exitWith = (code: number | undefined): Effect.Effect<void, CliExit> =>
  code === undefined || code === 0 ? Effect.void : Effect.fail(new CliExit({ code }))

// `serve` stops cleanly on SIGTERM/SIGINT (exit 0); any other command interrupted by a signal exits 130.
let interruptedCode = 130
/** The exit code when a signal interrupts the running command. */
export const setInterruptedExitCode = (code: number): void => {
  interruptedCode = code
}

/** For `runMain`: 0, the command's own code, 2 for usage errors, 130 on Ctrl-C, else 1. */
export const teardown = <E, A>(exit: Exit.Exit<E, A>, onExit: (code: number) => void): void => {
  if (Exit.isSuccess(exit)) return onExit(0)
  if (Cause.isInterruptedOnly(exit.cause)) return onExit(interruptedCode)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const e: unknown = failure.value
    if (e instanceof CliExit) return onExit(e.code)
    if (ValidationError.isValidationError(e)) return onExit(2)
  }
  process.stderr.write(`kintsugi: internal error: ${Cause.pretty(exit.cause).split("\n")[0] ?? ""}\n`)
  onExit(1)
}
