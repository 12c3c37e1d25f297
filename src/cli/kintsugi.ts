/**
 * The `kintsugi` command tree on @effect/cli, run by the platform's `runMain` (signals, exit codes).
 * Every command loads its wiring only when it runs: `--help` opens no database and starts nothing;
 * modules are imported one by one (no barrels), as `kintsugi --help` pays for every module it loads.
 */
import * as Command from "@effect/cli/Command"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Layer from "effect/Layer"
import * as Effect from "effect/Effect"
import pkg from "../../package.json" with { type: "json" }
import { agentsCommand } from "./agents.ts"
import { teardown } from "./exit.ts"
import { migrateCommand } from "./migrate.ts"
import { runCommand } from "./run.ts"
import { runJobCommand } from "./runJob.ts"
import { serve, serveCommand, serveConfig } from "./serve.ts"
import { usersCommand } from "./users.ts"

// The bare `kintsugi` serves, as it always did.
const kintsugi = Command.make("kintsugi", {}, () => Effect.flatMap(serveConfig, serve)).pipe(
  Command.withDescription("Kintsugi Runtime: agents as jobs, with a portal and an API."),
  Command.withSubcommands([serveCommand, runCommand, runJobCommand, migrateCommand, usersCommand, agentsCommand])
)

const cli = Command.run(kintsugi, { name: "kintsugi", version: pkg.version })

// @effect/cli refuses a repeated option written `--read=/x`: such forms become `--read /x` first
// (not when the word is itself the value of the option before it, as in `--task --read=x`).
const VALUE_OPTIONS = ["task", "read", "out", "root", "project", "timeout", "max-cost", "name", "expires-days", "grant", "port", "host", "completions", "log-level", "version", "agent-version"]
const takesValue = (word: string | undefined) => word !== undefined && VALUE_OPTIONS.some((o) => word === `--${o}`)

/** `--flag=value` as `--flag value`, for the options that take a value. */
export const splitEquals = (args: ReadonlyArray<string>): Array<string> =>
  args.flatMap((word, i) => {
    const eq = word.indexOf("=")
    return eq > 2 && takesValue(word.slice(0, eq)) && !takesValue(args[i - 1]) ? [word.slice(0, eq), word.slice(eq + 1)] : [word]
  })

/** `agents eval … --version N`: the version to evaluate, not the program's (@effect/cli's built-in `--version`). */
export const evalVersionFlag = (args: ReadonlyArray<string>): Array<string> =>
  args[0] === "agents" && args[1] === "eval" ? args.map((w, i) => (w === "--version" && i > 1 ? "--agent-version" : w)) : [...args]

/** A terminal that only writes: reading input is the wizard's, which loads the real one. */
const outputOnly: Terminal.Terminal = {
  columns: Effect.sync(() => process.stdout.columns ?? 80),
  rows: Effect.sync(() => process.stdout.rows ?? 24),
  isTTY: Effect.sync(() => process.stdout.isTTY === true),
  readInput: Effect.dieMessage("kintsugi: no terminal input without --wizard"),
  readLine: Effect.dieMessage("kintsugi: no terminal input without --wizard"),
  display: (text) => Effect.sync(() => void process.stdout.write(text))
}

// No option of ours reads files, and only `--wizard` prompts: the Bun file system and terminal (slow to
// load) are loaded for the wizard alone, so that `--help` and every command start sooner.
const platform = (args: ReadonlyArray<string>) =>
  args.includes("--wizard")
    ? Layer.unwrapEffect(
        Effect.promise(async () => {
          const [fs, path, terminal] = await Promise.all([
            import("@effect/platform-bun/BunFileSystem"),
            import("@effect/platform-bun/BunPath"),
            import("@effect/platform-bun/BunTerminal")
          ])
          return Layer.mergeAll(fs.layer, path.layer, terminal.layer)
        })
      )
    : Layer.mergeAll(FileSystem.layerNoop({}), Path.layer, Layer.succeed(Terminal.Terminal, outputOnly))

/** Runs the command line `argv` (as process.argv: runtime, script, arguments…) and exits with its code. */
export const main = (argv: ReadonlyArray<string>): void =>
  cli([...argv.slice(0, 2), ...evalVersionFlag(splitEquals(argv.slice(2)))]).pipe(Effect.provide(platform(argv)), BunRuntime.runMain({ disableErrorReporting: true, teardown }))
