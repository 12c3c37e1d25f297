/**
 * The `kintsugi` command tree on @effect/cli, run by the platform's `runMain` (signals, exit codes).
 * Every command loads its wiring only when it runs: `--help` opens no database and starts nothing;
 * modules are imported one by one (no barrels), as `kintsugi --help` pays for every module it loads.
 */
import * as Command from "@effect/cli/Command"
import * as BunFileSystem from "@effect/platform-bun/BunFileSystem"
import * as BunPath from "@effect/platform-bun/BunPath"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as BunTerminal from "@effect/platform-bun/BunTerminal"
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
const VALUE_OPTIONS = ["task", "read", "out", "root", "project", "timeout", "max-cost", "name", "expires-days", "grant", "port", "host", "completions", "log-level"]
const takesValue = (word: string | undefined) => word !== undefined && VALUE_OPTIONS.some((o) => word === `--${o}`)

/** `--flag=value` as `--flag value`, for the options that take a value. */
export const splitEquals = (args: ReadonlyArray<string>): Array<string> =>
  args.flatMap((word, i) => {
    const eq = word.indexOf("=")
    return eq > 2 && takesValue(word.slice(0, eq)) && !takesValue(args[i - 1]) ? [word.slice(0, eq), word.slice(eq + 1)] : [word]
  })

/** Runs the command line `argv` (as process.argv: runtime, script, arguments…) and exits with its code. */
export const main = (argv: ReadonlyArray<string>): void =>
  cli([...argv.slice(0, 2), ...splitEquals(argv.slice(2))]).pipe(Effect.provide(Layer.mergeAll(BunFileSystem.layer, BunPath.layer, BunTerminal.layer)), BunRuntime.runMain({ disableErrorReporting: true, teardown }))
