/**
 * What the `kintsugi` commands may write to a terminal: colour only on a terminal and never with
 * `NO_COLOR` set (no-color.org), and a Console that removes escape codes from everything @effect/cli
 * prints (its help, errors and version) when colour is off.
 */
import * as Console from "effect/Console"

/** True when escape codes may go to `stream`: it is a terminal and `NO_COLOR` is unset or empty (process.env by default: console output is decided before a command's runtime exists). */
export const colourAllowed = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => stream.isTTY === true && (env["NO_COLOR"] ?? "") === ""

// CSI sequences (colours, cursor moves) and OSC sequences (links, titles).
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g

/** `text` without terminal escape sequences. */
const stripAnsi = (text: string): string => text.replace(ANSI, "")

/** `text` without colours and text styles (SGR sequences), keeping cursor moves (the wizard's prompts need them). */
export const stripColour = (text: string): string => text.replace(/\u001b\[[0-9;]*m/g, "")

const plain = (args: ReadonlyArray<unknown>): Array<unknown> => args.map((a) => (typeof a === "string" ? stripAnsi(a) : a))

/**
 * `console` with escape codes removed from what goes to stdout (`log`, `info`, `debug`) unless
 * `stdout` may have colour, and from what goes to stderr (`error`, `warn`) unless `stderr` may.
 */
export const plainConsole = (
  console: Console.Console,
  allowed: { readonly stdout: boolean; readonly stderr: boolean }
): Console.Console => {
  const out = <A>(f: (...args: ReadonlyArray<unknown>) => A) =>
    allowed.stdout ? f : (...args: ReadonlyArray<unknown>) => f(...plain(args))
  const err = <A>(f: (...args: ReadonlyArray<unknown>) => A) =>
    allowed.stderr ? f : (...args: ReadonlyArray<unknown>) => f(...plain(args))
  return {
    ...console,
    log: out(console.log),
    info: out(console.info),
    debug: out(console.debug),
    error: err(console.error),
    warn: err(console.warn),
    unsafe: {
      ...console.unsafe,
      log: out(console.unsafe.log),
      info: out(console.unsafe.info),
      debug: out(console.unsafe.debug),
      error: err(console.unsafe.error),
      warn: err(console.unsafe.warn)
    }
  }
}
