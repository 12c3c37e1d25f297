/**
 * The `kintsugi` command tree on @effect/cli, run by the platform's `runMain` (signals, exit codes).
 * Every command loads its wiring only when it runs: `--help` opens no database and starts nothing;
 * modules are imported one by one (no barrels), as `kintsugi --help` pays for every module it loads.
 * Help is one screen per command (help.ts); nothing writes escape codes when colour is off (terminal.ts).
 */
import * as BuiltInOptions from "@effect/cli/BuiltInOptions"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as Directive from "@effect/cli/CommandDirective"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Layer from "effect/Layer"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import pkg from "../../package.json" with { type: "json" }
import { agentsCommand } from "./agents.ts"
import { teardown } from "./exit.ts"
import { helpPath, helpTree, renderHelp } from "./help.ts"
import { jobsCommand } from "./jobs.ts"
import { migrateCommand } from "./migrate.ts"
import { runCommand } from "./run.ts"
import { runJobCommand } from "./runJob.ts"
import { serve, serveCommand, serveConfig } from "./serve.ts"
import { colourAllowed, plainConsole, stripColour } from "./terminal.ts"
import { usersCommand } from "./users.ts"

// The bare `kintsugi` serves, as it always did.
const kintsugi = Command.make("kintsugi", {}, () => Effect.flatMap(serveConfig, serve)).pipe(
  Command.withDescription("Kintsugi Runtime: agents as jobs, with a portal and an API."),
  Command.withSubcommands([serveCommand, runCommand, runJobCommand, migrateCommand, usersCommand, agentsCommand, jobsCommand])
)

const cli = Command.run(kintsugi, { name: "kintsugi", version: pkg.version })

// Case-sensitive: `-H` (serve's host) is not `-h` (help).
const config = CliConfig.make({ isCaseSensitive: true })

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
const light = Layer.mergeAll(FileSystem.layerNoop({}), Path.layer, Layer.succeed(Terminal.Terminal, outputOnly))
const wizardPlatform = (colour: boolean) =>
  Layer.unwrapEffect(
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

/** The built-in option (help, wizard, version…) that @effect/cli's parse of `args` asks for, if any. */
export const builtInRequest = (args: ReadonlyArray<string>): Effect.Effect<Option.Option<BuiltInOptions.BuiltInOptions>> =>
  Descriptor.parse(kintsugi.descriptor, ["kintsugi", ...args], config).pipe(
    Effect.provide(light),
    Effect.option,
    Effect.map(Option.flatMap((d) => (Directive.isBuiltIn(d) ? Option.some(d.option) : Option.none())))
  )

/** The help screen (help.ts) of the command a help request names, or undefined for no command of ours. */
export const helpScreen = (
  request: BuiltInOptions.ShowHelp,
  options: { readonly colour: boolean; readonly width: number }
): string | undefined => {
  const tree = helpTree(kintsugi, [usersCommand, agentsCommand, jobsCommand])
  const path = helpPath(tree, request.helpDoc, config)
  return path === undefined ? undefined : renderHelp(tree, path, { program: "kintsugi", version: pkg.version, config, ...options })
}

/** Help is drawn here; anything else (the command, its usage error, the other built-in options) is @effect/cli's `run`. */
const dispatch = (argv: ReadonlyArray<string>, args: ReadonlyArray<string>, colour: boolean) =>
  Effect.gen(function* () {
    const builtIn = yield* builtInRequest(args)
    if (Option.isSome(builtIn) && BuiltInOptions.isShowHelp(builtIn.value)) {
      const help = helpScreen(builtIn.value, { colour, width: process.stdout.columns ?? 80 })
      if (help !== undefined) return yield* Effect.sync(() => void process.stdout.write(help))
    }
    const wizard = Option.isSome(builtIn) && BuiltInOptions.isShowWizard(builtIn.value)
    return yield* cli([...argv.slice(0, 2), ...args]).pipe(Effect.provide(wizard ? wizardPlatform(colour) : light))
  })

/** Runs the command line `argv` (as process.argv: runtime, script, arguments…) and exits with its code. */
export const main = (argv: ReadonlyArray<string>): void => {
  const allowed = { stdout: colourAllowed(process.stdout), stderr: colourAllowed(process.stderr) }
  dispatch(argv, argv.slice(2), allowed.stdout).pipe(
    (program) => Effect.consoleWith((console) => Effect.withConsole(program, plainConsole(console, allowed))),
    Effect.provide(CliConfig.layer(config)),
    BunRuntime.runMain({ disableErrorReporting: true, teardown })
  )
}
