/**
 * `kintsugi run <agent> --task … --read <dir> --out <dir> [--json]`: one job, through a running server
 * or in this process, with live progress (or NDJSON events) and one summary at the end (runOutput.ts).
 * `kintsugi run --continue <job> "<task>"`: the continuation of a finished job, through a running server.
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

/** What the parsed options ask for: a new job, the continuation of one, or a usage error to print (exit 2). */
type RunMode =
  | { readonly _tag: "New"; readonly job: RunArgs }
  | { readonly _tag: "Continue"; readonly parent: string; readonly task: string }
  | { readonly _tag: "Usage"; readonly message: string }

interface ParsedRun {
  readonly agent: string
  readonly task: string
  readonly read: ReadonlyArray<string>
  readonly out: string
  readonly continue: Option.Option<string>
  readonly root: Option.Option<string>
  readonly project: Option.Option<string>
  readonly timeout: number
  readonly maxCost: Option.Option<number>
}

/**
 * The job the options describe. A new job needs --task, at least one --read and --out; --continue takes
 * the next task as its argument and none of the options that describe a job (the parent's hold).
 */
export const runMode = (o: ParsedRun): RunMode => {
  if (Option.isSome(o.continue)) {
    const given = [
      ...(o.task === "" ? [] : ["--task"]),
      ...(o.read.length === 0 ? [] : ["--read"]),
      ...(o.out === "" ? [] : ["--out"]),
      ...(Option.isNone(o.root) ? [] : ["--root"]),
      ...(Option.isNone(o.project) ? [] : ["--project"]),
      ...(Option.isNone(o.maxCost) ? [] : ["--max-cost"])
    ]
    return given.length > 0
      ? {
          _tag: "Usage",
          message: `--continue takes the next task as its argument and no ${given.join(", ")}: the job it continues sets its agent, workspace, project and limits`
        }
      : { _tag: "Continue", parent: o.continue.value, task: o.agent }
  }
  const missing = [
    ...(o.task === "" ? ["--task"] : []),
    ...(o.read.length === 0 ? ["--read (at least one)"] : []),
    ...(o.out === "" ? ["--out"] : [])
  ]
  if (missing.length > 0) return { _tag: "Usage", message: `missing ${missing.join(", ")}` }
  return {
    _tag: "New",
    job: {
      agent: o.agent,
      task: o.task,
      read: o.read,
      out: o.out,
      root: Option.getOrElse(o.root, () => commonAncestor([...o.read, o.out])),
      timeoutSec: o.timeout,
      ...Option.match(o.project, { onNone: () => ({}), onSome: (project) => ({ project }) }),
      ...Option.match(o.maxCost, { onNone: () => ({}), onSome: (maxCostUsd) => ({ maxCostUsd }) })
    }
  }
}

export const runCommand = Command.make(
  "run",
  {
    task: Options.text("task").pipe(
      Options.withAlias("t"),
      Options.withDefault(""),
      Options.withDescription("what the agent should do (required, except with --continue)")
    ),
    read: Options.text("read").pipe(
      Options.withAlias("r"),
      Options.repeated,
      Options.map((paths) => paths.map(absolute)),
      Options.withDescription("a directory or file the agent may read (repeatable; at least one, except with --continue)")
    ),
    out: Options.text("out").pipe(
      Options.withAlias("o"),
      Options.map(absolute),
      Options.withDefault(""),
      Options.withDescription("the directory the agent's outputs are committed to (required, except with --continue)")
    ),
    continue: Options.text("continue").pipe(
      Options.optional,
      Options.withDescription(
        "continue this finished job (its id) with the argument as the next task: same agent version, project, workspace and limits; through a running server"
      )
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
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent's name; with --continue, the next task"))
  },
  (o) => {
    const write = (s: string) => void process.stdout.write(s)
    const log = (line: string) => void process.stderr.write(`${line}\n`)
    const io = runIo({ json: o.json, write, log })
    return Effect.gen(function* () {
      const mode = runMode(o)
      if (mode._tag === "Usage") {
        log(`kintsugi run: ${mode.message}`)
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
        const token = { ...where, token: where.token }
        return yield* exitWith(
          yield* mode._tag === "Continue"
            ? remote.continueRemoteJob(token, mode.parent, mode.task, io)
            : remote.runRemoteJob(token, mode.job, io)
        )
      }
      // The parent's transcript is opened by a server's worker: continuing needs one running.
      if (mode._tag === "Continue") {
        log(`kintsugi run: --continue needs a running kintsugi server (none answers at ${where.url}; start one with \`kintsugi serve\`)`)
        return yield* exitWith(1)
      }
      const job = mode.job
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
