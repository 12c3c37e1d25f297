/** `kintsugi agents validate <file|dir|zip> [--json]`: the format checks of an agent package, offline. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import { exitWith } from "./exit.ts"

const validate = Command.make(
  "validate",
  {
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON object: problems, notes, package")),
    target: Args.text({ name: "file|dir|zip" }).pipe(Args.withDescription("<name>.md, a package folder, or an exported <package>.zip"))
  },
  ({ json, target }) =>
    Effect.promise(() => import("../agents/validateCommand.ts").then((m) => m.agentsValidateMain([target], undefined, process.env, json))).pipe(
      Effect.flatMap(exitWith)
    )
).pipe(Command.withDescription("Check an agent package: exit 0 valid, 1 problems found (every one listed), 2 unreadable target."))

export const agentsCommand = Command.make("agents").pipe(
  Command.withDescription("Agent packages."),
  Command.withSubcommands([validate])
)
