/**
 * The command line is parsed by @effect/cli alone: the options arrive typed in the handler (paths
 * absolute, defaults filled in), in any order around the positional argument; usage errors are
 * @effect/cli's ValidationErrors (exit 2, exit.ts); a help request names its command through
 * @effect/cli's own parse. Nothing rewrites the arguments first.
 */
import { describe, expect, test } from "bun:test"
import * as BuiltInOptions from "@effect/cli/BuiltInOptions"
import * as Command from "@effect/cli/Command"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import { Effect, Layer, Option } from "effect"
import { resolve } from "node:path"
import { builtInRequest, helpScreen } from "../../src/cli/kintsugi.ts"
import { runCommand, runMode } from "../../src/cli/run.ts"

type RunOptions = typeof runCommand extends Command.Command<"run", infer _R, infer _E, infer A> ? A : never

const platform = Layer.mergeAll(
  FileSystem.layerNoop({}),
  Path.layer,
  Layer.succeed(Terminal.Terminal, {
    columns: Effect.succeed(80),
    rows: Effect.succeed(24),
    isTTY: Effect.succeed(false),
    readInput: Effect.die("no input"),
    readLine: Effect.die("no input"),
    display: () => Effect.void
  })
)

/** What `kintsugi run <args>` hands its handler, or the parse's failure. */
const parseRun = (args: ReadonlyArray<string>) => {
  let seen: RunOptions | undefined
  const cli = Command.run(
    Command.withHandler(runCommand, (o) => Effect.sync(() => void (seen = o))),
    { name: "kintsugi", version: "0" }
  )
  return cli(["bun", "kintsugi", ...args]).pipe(
    Effect.map(() => seen),
    Effect.either,
    Effect.provide(platform),
    // @effect/cli prints its usage errors on the console: kept out of the test's output.
    (program) =>
      Effect.consoleWith((console) => Effect.withConsole(program, { ...console, error: () => Effect.void, log: () => Effect.void })),
    Effect.runPromise
  )
}

describe("kintsugi run: typed options, straight from @effect/cli", () => {
  test("agent first or last, --flag value or --flag=value, repeated --read: the same typed options", async () => {
    const forms = [
      ["a", "--task", "t", "--read", "/x", "--read", "/y", "--out", "/o"],
      ["a", "--task=t", "--read", "/x", "--read", "/y", "--out=/o"],
      ["--task", "t", "-r", "/x", "--read", "/y", "-o", "/o", "a"],
      ["-t", "t", "--read", "/x", "a", "-r", "/y", "--out", "/o"]
    ]
    for (const args of forms) {
      const parsed = await parseRun(args)
      expect(parsed._tag).toBe("Right")
      if (parsed._tag === "Right") {
        expect(parsed.right).toEqual({
          agent: "a",
          task: "t",
          read: ["/x", "/y"],
          out: "/o",
          continue: Option.none(),
          root: Option.none(),
          project: Option.none(),
          timeout: 1800,
          maxCost: Option.none(),
          json: false
        })
      }
    }
  })

  test("paths are absolute from the shell's folder; numbers are numbers; a task may start with a dash", async () => {
    const parsed = await parseRun([
      "a",
      "-t",
      "--not-a-flag",
      "-r",
      "src",
      "-o",
      "out",
      "--root",
      ".",
      "--timeout",
      "60",
      "--max-cost",
      "0.5",
      "--project",
      "p",
      "-j"
    ])
    expect(parsed._tag === "Right" ? parsed.right : parsed.left).toEqual({
      agent: "a",
      task: "--not-a-flag",
      read: [resolve("src")],
      out: resolve("out"),
      continue: Option.none(),
      root: Option.some(resolve(".")),
      project: Option.some("p"),
      timeout: 60,
      maxCost: Option.some(0.5),
      json: true
    })
  })

  test("usage errors are @effect/cli's: an unknown flag, a missing option, a bad number, a value out of range", async () => {
    for (const [args, tag] of [
      [["a", "-t", "t", "-r", "/x", "-o", "/o", "--frob", "x"], "InvalidValue"],
      [["a", "-t", "t", "-r", "/x", "-o", "/o", "--timeout", "abc"], "InvalidValue"],
      [["a", "-t", "t", "-r", "/x", "-o", "/o", "--timeout", "-1"], "InvalidValue"],
      [["a", "-t", "t", "-r", "/x", "-o", "/o", "--max-cost", "-2"], "InvalidValue"],
      [["-t", "t", "-r", "/x", "-o", "/o"], "MissingValue"],
      // A repeated option takes its value as the next word: `--read /x`, not `--read=/x`.
      [["a", "-t", "t", "--read=/x", "-o", "/o"], "InvalidValue"]
    ] as const) {
      const parsed = await parseRun(args)
      expect({ args, tag: parsed._tag === "Left" ? (parsed.left as { _tag: string })._tag : "parsed" }).toEqual({ args, tag })
    }
  })
})

describe("kintsugi run: a new job or the continuation of one (runMode)", () => {
  const modeOf = async (args: ReadonlyArray<string>) => {
    const parsed = await parseRun(args)
    if (parsed._tag === "Left" || parsed.right === undefined) throw new Error(`${args.join(" ")} did not parse`)
    return runMode(parsed.right)
  }

  test("a new job needs --task, at least one --read and --out: each one missing is named", async () => {
    expect(await modeOf(["a", "-t", "t", "-o", "/o"])).toEqual({ _tag: "Usage", message: "missing --read (at least one)" })
    expect(await modeOf(["a", "-t", "t", "-r", "/x"])).toEqual({ _tag: "Usage", message: "missing --out" })
    expect(await modeOf(["a"])).toEqual({ _tag: "Usage", message: "missing --task, --read (at least one), --out" })
    expect((await modeOf(["a", "-t", "t", "-r", "/x", "-o", "/o"]))._tag).toBe("New")
  })

  test("--continue <job> takes the next task as its argument, and none of the options that describe a job", async () => {
    expect(await modeOf(["--continue", "job-1", "And then?"])).toEqual({ _tag: "Continue", parent: "job-1", task: "And then?" })
    const refused = await modeOf(["--continue", "job-1", "And then?", "-r", "/x", "--project", "p"])
    expect(refused).toMatchObject({ _tag: "Usage" })
    expect(refused._tag === "Usage" ? refused.message : "").toContain("no --read, --project")
  })
})

describe("help requests, found by @effect/cli's parse", () => {
  const COMMANDS = [
    [],
    ["serve"],
    ["run"],
    ["run-job"],
    ["migrate"],
    ["users"],
    ["users", "add"],
    ["users", "revoke-token"],
    ["agents"],
    ["agents", "validate"],
    ["agents", "eval"]
  ]

  test("`… --help` and `… -h` anywhere after the command: that command's own screen", async () => {
    for (const path of COMMANDS) {
      for (const args of [
        [...path, "--help"],
        [...path, "-h"],
        [...path, "x", "-h", "--port", "1"]
      ]) {
        const request = await Effect.runPromise(builtInRequest(args))
        const help =
          Option.isSome(request) && BuiltInOptions.isShowHelp(request.value)
            ? helpScreen(request.value, { colour: false, width: 80 })
            : undefined
        const first = help?.split("\n")[0] ?? ""
        expect({ args, title: first.startsWith(["kintsugi", ...path].join(" ") + (path.length === 0 ? " " : ":")) }).toEqual({
          args,
          title: true
        })
      }
    }
  })

  test("no help asked: none drawn (a command, a usage error, the version)", async () => {
    for (const args of [["run", "a", "-t", "t", "-r", "/x", "-o", "/o"], ["frobnicate"], ["--version"], ["users", "add"]]) {
      const request = await Effect.runPromise(builtInRequest(args))
      expect(Option.isSome(request) && BuiltInOptions.isShowHelp(request.value)).toBe(false)
    }
  })
})
