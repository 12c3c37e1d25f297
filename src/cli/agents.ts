/** `kintsugi agents validate <file|dir|zip> [--json] [--strict] [--mcp-servers a,b]` and `agents eval`. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { exitWith } from "./exit.ts"

/** What the checks read of the configuration: the sandbox mode and where the installation's database is. */
const installation = Effect.map(
  Effect.all(
    ["KINTSUGI_SANDBOX", "KINTSUGI_ALLOW_UNCONFINED_ROOT", "DATABASE_URL", "KINTSUGI_DATA_DIR"].map((name) =>
      Effect.map(
        Effect.orElseSucceed(Config.option(Config.string(name)), () => Option.none<string>()),
        (v) => [name, Option.getOrUndefined(v)] as const
      )
    )
  ),
  (pairs): Readonly<Record<string, string | undefined>> => Object.fromEntries(pairs)
)

const validate = Command.make(
  "validate",
  {
    json: Options.boolean("json").pipe(
      Options.withAlias("j"),
      Options.withDescription("print one JSON object: problems, warnings, notes, package")
    ),
    strict: Options.boolean("strict").pipe(
      Options.withDescription("refuse Claude Code tools without a Kintsugi equivalent (default: dropped, a warning each)")
    ),
    mcpServers: Options.text("mcp-servers").pipe(
      Options.optional,
      Options.withDescription(
        "the registered MCP server names (a,b) to check grants against; default: the installation's (DATABASE_URL or the data dir, when no serve holds it)"
      )
    ),
    target: Args.text({ name: "file|dir|zip" }).pipe(Args.withDescription("<name>.md, a package folder, or an exported <package>.zip"))
  },
  ({ json, mcpServers, strict, target }) =>
    Effect.flatMap(installation, (env) =>
      Effect.promise(() =>
        import("../agents/validateCommand.ts").then((m) =>
          m.agentsValidate(target, undefined, env, { json, strict, mcpServers: Option.getOrUndefined(mcpServers) })
        )
      )
    ).pipe(Effect.flatMap(exitWith))
).pipe(
  Command.withDescription(
    "Check an agent package (MCP grants against --mcp-servers or the installation's registry when readable): exit 0 valid, 1 problems found (every one listed), 2 unreadable target."
  )
)

const evalCommand = Command.make(
  "eval",
  {
    // Not `--version`: that is @effect/cli's built-in flag on every command (the program's version).
    version: Options.integer("agent-version").pipe(
      Options.optional,
      Options.withDescription("the version to evaluate (default: the current one)")
    ),
    project: Options.text("project").pipe(
      Options.optional,
      Options.withDescription("the project the eval jobs run in (default: the reserved kintsugi-evals)")
    ),
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent's name"))
  },
  ({ agent, project, version }) =>
    Effect.gen(function* () {
      const log = (line: string) => void process.stderr.write(`${line}\n`)
      const write = (s: string) => void process.stdout.write(s)
      const remote = yield* Effect.promise(() => import("./runRemote.ts"))
      const where = yield* remote.remoteConfig
      if (!(yield* remote.serverUp(where.url))) {
        log(
          `kintsugi agents eval: no kintsugi server answers at ${where.url} (evals run as jobs on a server: start it with \`kintsugi serve\`, or set KINTSUGI_URL)`
        )
        return yield* exitWith(2)
      }
      if (where.token === undefined) {
        log(
          `kintsugi agents eval: set KINTSUGI_TOKEN or put an API token in ${where.tokenFile} (issue one with \`kintsugi users token <you>\`)`
        )
        return yield* exitWith(2)
      }
      const { evalRemote } = yield* Effect.promise(() => import("./evalRemote.ts"))
      const v = Option.getOrUndefined(version)
      const p = Option.getOrUndefined(project)
      const code = yield* evalRemote(
        { ...where, token: where.token },
        { agent, ...(v === undefined ? {} : { version: v }), ...(p === undefined ? {} : { project: p }) },
        { write, log }
      )
      return yield* exitWith(code)
    })
).pipe(
  Command.withDescription(
    "Run an agent version's evals on the running server (KINTSUGI_URL, token from KINTSUGI_TOKEN or ~/.config/kintsugi/token) and print a table: exit 0 all passed, 1 an eval failed, 2 the run could not start."
  )
)

export const agentsCommand = Command.make("agents").pipe(
  Command.withDescription("Agent packages."),
  Command.withSubcommands([validate, evalCommand])
)
