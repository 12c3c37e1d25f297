/** `kintsugi agents validate <file|dir|zip> [--json] [--mcp-servers a,b]`: the checks of an agent package. */
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
      Effect.map(Effect.orElseSucceed(Config.option(Config.string(name)), () => Option.none<string>()), (v) => [name, Option.getOrUndefined(v)] as const)
    )
  ),
  (pairs): Readonly<Record<string, string | undefined>> => Object.fromEntries(pairs)
)

const validate = Command.make(
  "validate",
  {
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON object: problems, notes, package")),
    mcpServers: Options.text("mcp-servers").pipe(
      Options.optional,
      Options.withDescription("the registered MCP server names (a,b) to check grants against; default: the installation's (DATABASE_URL or the data dir, when no serve holds it)")
    ),
    target: Args.text({ name: "file|dir|zip" }).pipe(Args.withDescription("<name>.md, a package folder, or an exported <package>.zip"))
  },
  ({ json, mcpServers, target }) =>
    Effect.flatMap(installation, (env) =>
      Effect.promise(() =>
        import("../agents/validateCommand.ts").then((m) =>
          m.agentsValidateMain([target], undefined, env, { json, mcpServers: Option.getOrUndefined(mcpServers) })
        )
      )
    ).pipe(
      Effect.flatMap(exitWith)
    )
).pipe(Command.withDescription("Check an agent package (MCP grants against --mcp-servers or the installation's registry when readable): exit 0 valid, 1 problems found (every one listed), 2 unreadable target."))

export const agentsCommand = Command.make("agents").pipe(
  Command.withDescription("Agent packages."),
  Command.withSubcommands([validate])
)
