/**
 * `kintsugi jobs export-test <job> [--out <dir>]`: a completed job (with a transcript) as a self-contained
 * `bun test` folder, from a running server (found and authenticated as `kintsugi run` does, runRemote.ts;
 * exportTest.ts writes it). Exit 0 written, 1 the server refused or is not running, 2 on usage (no
 * token, an output folder that holds files).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import { resolve } from "node:path"
import { exitWith } from "./exit.ts"

const exportTest = Command.make(
  "export-test",
  {
    out: Options.text("out").pipe(
      Options.withAlias("o"),
      Options.optional,
      Options.withDescription("the folder to write (empty or new); default: ./kintsugi-job-<job>")
    ),
    job: Args.text({ name: "job" }).pipe(Args.withDescription("the job's id"))
  },
  ({ job, out }) =>
    Effect.gen(function* () {
      const log = (line: string) => void process.stderr.write(`${line}\n`)
      const write = (s: string) => void process.stdout.write(s)
      const remote = yield* Effect.promise(() => import("./runRemote.ts"))
      const where = yield* remote.remoteConfig
      if (!(yield* remote.serverUp(where.url))) {
        log(`kintsugi jobs export-test: no kintsugi server answers at ${where.url} (start it with \`kintsugi serve\`, or set KINTSUGI_URL)`)
        return yield* exitWith(1)
      }
      if (where.token === undefined) {
        log(
          `kintsugi jobs export-test: set KINTSUGI_TOKEN or put an API token in ${where.tokenFile} (issue one with \`kintsugi users token <you>\`)`
        )
        return yield* exitWith(2)
      }
      const folder = resolve(out._tag === "Some" ? out.value : `kintsugi-job-${job}`)
      const token = { ...where, token: where.token }
      const { exportTestRemote } = yield* Effect.promise(() => import("./exportTest.ts"))
      return yield* exitWith(yield* Effect.promise(() => exportTestRemote(token, job, folder, { write, log })))
    })
).pipe(
  Command.withDescription(
    "Write a completed job as a self-contained test: its agent package, the workspace files it read, the model's turns as a scripted server script, and a job.test.ts that replays them with kintsugi-runtime/testing. Needs a running server (KINTSUGI_URL, token from KINTSUGI_TOKEN or ~/.config/kintsugi/token) and transcripts.read; the job's project must keep transcripts (transcripts: full)."
  )
)

export const jobsCommand = Command.make("jobs").pipe(Command.withDescription("Jobs."), Command.withSubcommands([exportTest]))
