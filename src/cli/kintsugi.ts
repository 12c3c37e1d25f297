/**
 * The `kintsugi` command tree on @effect/cli, run by the platform's `runMain` (signals, exit codes).
 * Every command loads its wiring only when it runs: `--help` opens no database and starts nothing;
 * modules are imported one by one (no barrels), as `kintsugi --help` pays for every module it loads.
 * Help is one screen per command (help.ts); nothing writes escape codes when colour is off (terminal.ts).
 */
import * as CliConfig from "@effect/cli/CliConfig"
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
import { helpRequest, helpTree, renderHelp } from "./help.ts"
import { migrateCommand } from "./migrate.ts"
import { runCommand } from "./run.ts"
import { runJobCommand } from "./runJob.ts"
import { serve, serveCommand, serveConfig } from "./serve.ts"
import { colourAllowed, plainConsole, stripColour } from "./terminal.ts"
import { usersCommand } from "./users.ts"

// The bare `kintsugi` serves, as it always did.
const kintsugi = Command.make("kintsugi", {}, () => Effect.flatMap(serveConfig, serve)).pipe(
  Command.withDescription("Kintsugi Runtime: agents as jobs, with a portal and an API."),
  Command.withSubcommands([serveCommand, runCommand, runJobCommand, migrateCommand, usersCommand, agentsCommand])
)

const cli = Command.run(kintsugi, { name: "kintsugi", version: pkg.version })

// Case-sensitive: `-H` (serve's host) is not `-h` (help).
const config = CliConfig.make({ isCaseSensitive: true })

// @effect/cli refuses a repeated option written `--read=/x`: such forms become `--read /x` first
// (not when the word is itself the value of the option before it, as in `--task --read=x`).
const VALUE_OPTIONS = ["task", "read", "out", "root", "project", "timeout", "max-cost", "name", "expires-days", "grant", "port", "host", "completions", "log-level", "version", "agent-version", "mcp-servers"]
// The short flags (docs/cli.md "Commands"): -t task, -r read, -o out, -p port, -H host, -n name, -g grant.
const VALUE_SHORT = ["t", "r", "o", "p", "H", "n", "g"]
const takesValue = (word: string | undefined) => word !== undefined && (VALUE_OPTIONS.some((o) => word === `--${o}`) || VALUE_SHORT.some((o) => word === `-${o}`))

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
// load) are loaded for the wizard alone, so that `--help` and every command start sooner. The wizard's
// prompts keep their cursor moves but lose their colours when colour is off.
const platform = (args: ReadonlyArray<string>, colour: boolean) =>
  args.includes("--wizard")
    ? Layer.unwrapEffect(
        Effect.promise(async () => {
          const [fs, path, terminal] = await Promise.all([
            import("@effect/platform-bun/BunFileSystem"),
            import("@effect/platform-bun/BunPath"),
            import("@effect/platform-bun/BunTerminal")
          ])
          const plainTerminal = Layer.effect(
            Terminal.Terminal,
            Effect.map(Terminal.Terminal, (t): Terminal.Terminal => (colour ? t : { ...t, display: (text) => t.display(stripColour(text)) }))
          ).pipe(Layer.provide(terminal.layer))
          return Layer.mergeAll(fs.layer, path.layer, plainTerminal)
        })
      )
    : Layer.mergeAll(FileSystem.layerNoop({}), Path.layer, Layer.succeed(Terminal.Terminal, outputOnly))

/** The help `args` ask for, or undefined when they ask for none (help.ts). */
const helpText = (args: ReadonlyArray<string>, colour: boolean, width: number): string | undefined => {
  if (!args.includes("--help") && !args.includes("-h")) return undefined
  const tree = helpTree(kintsugi, [usersCommand, agentsCommand])
  const path = helpRequest(tree, args, takesValue)
  return path === undefined ? undefined : renderHelp(tree, path, { program: "kintsugi", version: pkg.version, config, colour, width })
}

/** Runs the command line `argv` (as process.argv: runtime, script, arguments…) and exits with its code. */
export const main = (argv: ReadonlyArray<string>): void => {
  const args = evalVersionFlag(splitEquals(argv.slice(2)))
  const help = helpText(args, colourAllowed(process.stdout), process.stdout.columns ?? 80)
  if (help !== undefined) return void process.stdout.write(help)
  const allowed = { stdout: colourAllowed(process.stdout), stderr: colourAllowed(process.stderr) }
  cli([...argv.slice(0, 2), ...args]).pipe(
    (program) => Effect.consoleWith((console) => Effect.withConsole(program, plainConsole(console, allowed))),
    Effect.provide(Layer.mergeAll(platform(argv, allowed.stdout), CliConfig.layer(config))),
    BunRuntime.runMain({ disableErrorReporting: true, teardown })
  )
}
