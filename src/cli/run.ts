/**
 * `kintsugi run <agent> --task … --read <dir> --out <dir> [--json]`: one job, through a running server
 * or in this process, with live progress (or NDJSON events) and one summary at the end (runOutput.ts).
 * Exit 0 completed, 1 failed, 2 on usage or a refused workspace, 130 on Ctrl-C (after the job has
 * ended as aborted, and said so).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { resolve } from "node:path"
import type { RunArgs } from "../worker/runCommand.ts"
import { CliExit, exitWith } from "./exit.ts"
import { explainStartFailure } from "./explain.ts"
import { runIo } from "./runOutput.ts"

/** The deepest directory holding every path (absolute): `/a/b/src` and `/a/b/out` → `/a/b`. */
export const commonAncestor = (paths: ReadonlyArray<string>): string => {
  const split = paths.map((p) => p.split("/").filter((s) => s !== ""))
  const first = split[0] ?? []
  let n = 0
  // A lone path (a --read file, say) is held by its parent.
  const max = Math.min(...split.map((parts) => parts.length)) - (paths.length === 1 ? 1 : 0)
  while (n < max && split.every((parts) => parts[n] === first[n])) n++
  return "/" + first.slice(0, n).join("/")
}

/** A number option's value when `ok`, else a usage error (exit 2) saying `message`. */
const checked = (ok: (n: number) => boolean, message: string) => (n: number) =>
  ok(n) ? Effect.succeed(n) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(message)))

/** A path as given, made absolute (relative to the shell's current folder). */
const absolute = (path: string) => resolve(path)

/** Why there is no installation to run in (installation.ts: DATABASE_URL, else the data dir), or undefined. */
const missingInstallation = (serverUrl: string) =>
  Effect.gen(function* () {
    const url = yield* Config.option(Config.string("DATABASE_URL")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const dir = yield* Config.option(Config.string("KINTSUGI_DATA_DIR")).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    const installation = yield* Effect.promise(() => import("./installation.ts"))
    return yield* Effect.promise(() =>
      installation.missingInstallation({
        databaseUrl: Option.getOrUndefined(url),
        dataDir: installation.resolveDataDir(Option.getOrUndefined(dir)),
        serverUrl
      })
    )
  })

export const runCommand = Command.make(
  "run",
  {
    task: Options.text("task").pipe(Options.withAlias("t"), Options.withDescription("what the agent should do")),
    read: Options.text("read").pipe(
      Options.withAlias("r"),
      Options.atLeast(1),
      Options.map((paths) => paths.map(absolute)),
      Options.withDescription("a directory or file the agent may read (repeatable)")
    ),
    out: Options.text("out").pipe(
      Options.withAlias("o"),
      Options.map(absolute),
      Options.withDescription("the directory the agent's outputs are committed to")
    ),
    root: Options.text("root").pipe(
      Options.map(absolute),
      Options.optional,
      Options.withDescription("the workspace root; default: the deepest directory holding every --read and --out")
    ),
    project: Options.text("project").pipe(Options.optional, Options.withDescription("a project id")),
    timeout: Options.float("timeout").pipe(
      Options.mapEffect(checked((s) => s > 0, "--timeout must be a positive number of seconds")),
      Options.withDefault(1800),
      Options.withDescription("seconds; default 1800")
    ),
    maxCost: Options.float("max-cost").pipe(
      Options.mapEffect(checked((usd) => usd >= 0, "--max-cost must be a number of USD")),
      Options.optional,
      Options.withDescription("a cost limit in USD")
    ),
    json: Options.boolean("json").pipe(
      Options.withAlias("j"),
      Options.withDescription("the job's events as NDJSON on stdout, then one summary object")
    ),
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent's name"))
  },
  (o) => {
    const write = (s: string) => void process.stdout.write(s)
    const log = (line: string) => void process.stderr.write(`${line}\n`)
    const io = runIo({ json: o.json, write, log })
    return Effect.gen(function* () {
      const job: RunArgs = {
        agent: o.agent,
        task: o.task,
        read: o.read,
        out: o.out,
        root: Option.getOrElse(o.root, () => commonAncestor([...o.read, o.out])),
        timeoutSec: o.timeout,
        ...Option.match(o.project, { onNone: () => ({}), onSome: (project) => ({ project }) }),
        ...Option.match(o.maxCost, { onNone: () => ({}), onSome: (maxCostUsd) => ({ maxCostUsd }) })
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
        return yield* exitWith(yield* remote.runRemoteJob({ ...where, token: where.token }, job, io))
      }
      // No server: this process opens the installation `serve` would, and never creates one.
      const missing = yield* missingInstallation(where.url)
      if (missing !== undefined) {
        log(`kintsugi run: ${missing}`)
        return yield* exitWith(1)
      }
      // The composition root is loaded only now: a server, or no installation, never pays for it.
      const [run, { LocalRunLive, makeRuntime }] = yield* Effect.promise(() =>
        Promise.all([import("../worker/runCommand.ts"), import("../main.ts")])
      )
      const rt = yield* Effect.acquireRelease(
        // The job's own progress is printed: only warnings and errors (diagnostics) go to stderr.
        // The job child (the bytecode bundle once built) starts while the database does (LocalRunLive).
        Effect.tryPromise(() => makeRuntime(LocalRunLive)).pipe(
          Effect.catchAll((e) => {
            log(
              `kintsugi run: cannot start: ${explainStartFailure((e.error instanceof Error ? e.error.message : "").split("\n")[0] ?? "")}`
            )
            return new CliExit({ code: 1 })
          })
        ),
        (rt) => Effect.promise(() => rt.dispose())
      )
      const runtime = yield* Effect.promise(() => rt.runtime())
      return yield* exitWith(yield* Effect.provide(run.runLocalJob(job, io), runtime))
    }).pipe(
      Effect.scoped,
      Effect.onInterrupt(() => Effect.sync(io.interrupted))
    )
  }
).pipe(
  Command.withDescription(
    "Run one job with live progress (the agent's binding): through a running server's API (KINTSUGI_URL, default http://HOST:PORT; token from KINTSUGI_TOKEN or ~/.config/kintsugi/token), else in this process on the data dir serve uses (never created here). Every path must lie inside a job root (KINTSUGI_JOB_ROOTS, default <data dir>/workspaces)."
  )
)
