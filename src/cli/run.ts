/**
 * `kintsugi run <agent> --task … --read <dir> --out <dir> [--json]`: one job, through a running server
 * or in this process, with live progress (or NDJSON events) and one summary at the end (runOutput.ts).
 * Exit 0 completed, 1 failed, 2 on usage or a refused workspace, 130 on Ctrl-C (after the job has
 * ended as aborted, and said so).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { CliExit, exitWith } from "./exit.ts"
import { explainStartFailure } from "./explain.ts"
import { runIo } from "./runOutput.ts"

const optional = (flag: string, value: Option.Option<string | number>) => (Option.isSome(value) ? [flag, String(value.value)] : [])

/** Why there is no installation to run in (installation.ts: DATABASE_URL, else the data dir), or undefined. */
const missingInstallation = (serverUrl: string) =>
  Effect.gen(function* () {
    const url = yield* Config.option(Config.string("DATABASE_URL")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const dir = yield* Config.option(Config.string("KINTSUGI_DATA_DIR")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const installation = yield* Effect.promise(() => import("./installation.ts"))
    return yield* Effect.promise(() =>
      installation.missingInstallation({ databaseUrl: Option.getOrUndefined(url), dataDir: installation.resolveDataDir(Option.getOrUndefined(dir)), serverUrl })
    )
  })

export const runCommand = Command.make(
  "run",
  {
    task: Options.text("task").pipe(Options.withAlias("t"), Options.withDescription("what the agent should do")),
    read: Options.text("read").pipe(Options.withAlias("r"), Options.atLeast(1), Options.withDescription("a directory or file the agent may read (repeatable)")),
    out: Options.text("out").pipe(Options.withAlias("o"), Options.withDescription("the directory the agent's outputs are committed to")),
    root: Options.text("root").pipe(Options.optional, Options.withDescription("the workspace root; default: the deepest directory holding every --read and --out")),
    project: Options.text("project").pipe(Options.optional, Options.withDescription("a project id")),
    timeout: Options.float("timeout").pipe(Options.optional, Options.withDescription("seconds; default 1800")),
    maxCost: Options.float("max-cost").pipe(Options.optional, Options.withDescription("a cost limit in USD")),
    json: Options.boolean("json").pipe(Options.withAlias("j"), Options.withDescription("the job's events as NDJSON on stdout, then one summary object")),
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent's name"))
  },
  (o) => {
    const write = (s: string) => void process.stdout.write(s)
    const log = (line: string) => void process.stderr.write(`${line}\n`)
    const io = runIo({ json: o.json, write, log })
    return Effect.gen(function* () {
      const run = yield* Effect.promise(() => import("../worker/runCommand.ts"))
      // One set of checks for argv and the typed options: the worker's parser (messages, defaults, the root).
      const parsed = run.parseRunArgs([
        o.agent,
        "--task",
        o.task,
        ...o.read.flatMap((r) => ["--read", r]),
        "--out",
        o.out,
        ...optional("--root", o.root),
        ...optional("--project", o.project),
        ...optional("--timeout", o.timeout),
        ...optional("--max-cost", o.maxCost)
      ])
      if (typeof parsed === "string") {
        log(`kintsugi run: ${parsed}\n${run.RUN_USAGE}`)
        return yield* exitWith(2)
      }
      // A running server takes the job through its API (the embedded database is its alone).
      const remote = yield* Effect.promise(() => import("./runRemote.ts"))
      const where = yield* remote.remoteConfig
      if (yield* remote.serverUp(where.url)) {
        if (where.token === undefined) {
          log(
            `kintsugi run: a kintsugi server is running at ${where.url}: set KINTSUGI_TOKEN or put an API token in ${where.tokenFile} ` +
              `(issue one with \`kintsugi users token <you>\`, POST /api/tokens or the portal's account page)`
          )
          return yield* exitWith(2)
        }
        return yield* exitWith(yield* remote.runRemoteJob({ ...where, token: where.token }, parsed, io))
      }
      // No server: this process opens the installation `serve` would, and never creates one.
      const missing = yield* missingInstallation(where.url)
      if (missing !== undefined) {
        log(`kintsugi run: ${missing}`)
        return yield* exitWith(1)
      }
      // The composition root is loaded once the arguments are known to be good.
      const { LocalRunLive, makeRuntime } = yield* Effect.promise(() => import("../main.ts"))
      const rt = yield* Effect.acquireRelease(
        // The job's own progress is printed: only warnings and errors (diagnostics) go to stderr.
        // The job child (the bytecode bundle once built) starts while the database does (LocalRunLive).
        Effect.tryPromise(() => makeRuntime(LocalRunLive)).pipe(
          Effect.catchAll((e) => {
            log(`kintsugi run: cannot start: ${explainStartFailure((e.error instanceof Error ? e.error.message : "").split("\n")[0] ?? "")}`)
            return new CliExit({ code: 1 })
          })
        ),
        (rt) => Effect.promise(() => rt.dispose())
      )
      const runtime = yield* Effect.promise(() => rt.runtime())
      return yield* exitWith(yield* Effect.provide(run.runLocalJob(parsed, io), runtime))
    }).pipe(Effect.scoped, Effect.onInterrupt(() => Effect.sync(io.interrupted)))
  }
).pipe(
  Command.withDescription(
    "Run one job with live progress (the agent's binding): through a running server's API (KINTSUGI_URL, default http://HOST:PORT; token from KINTSUGI_TOKEN or ~/.config/kintsugi/token), else in this process on the data dir serve uses (never created here). Every path must lie inside a job root (KINTSUGI_JOB_ROOTS, default <data dir>/workspaces)."
  )
)
