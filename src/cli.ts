#!/usr/bin/env bun
/** The `kintsugi` command: serve | run-job | migrate | users | agents validate. */
import { jobChildMain } from "./jobChild.ts"

const USAGE = `usage: kintsugi <command>

commands:
  serve                     serve the portal and API (PORT, HOST; default 127.0.0.1:7777)
  run <agent> --task … --read <dir> --out <dir>
                            run one job locally with live progress (uses the agent's binding)
  run-job                   run one agent job: JSON envelope on stdin, NDJSON events on stdout
  migrate                   apply database migrations (DATABASE_URL, else the embedded database)
  users add|grant|revoke|disable|enable|token|tokens|revoke-token
                            manage portal users, permissions and API tokens (users --help)
  agents validate <path>    check an agent package (.md, folder or .zip)`

// Commands load only what they need: the job child's start-up must not pay for the server.
const main = async (argv: ReadonlyArray<string>): Promise<number | undefined> => {
  const [command, ...rest] = argv
  switch (command) {
    case "run-job":
      return jobChildMain()
    case "serve":
    case undefined:
      return (await import("./http/serve.ts")).serveMain().then(() => undefined)
    case "migrate":
      return (await import("./db/migrateCommand.ts")).migrateMain()
    case "run":
      return (await import("./worker/runCommand.ts")).runMain(rest)
    case "users":
      return (await import("./access/usersCommand.ts")).usersMain(rest)
    case "agents":
      if (rest[0] === "validate") return (await import("./agents/validateCommand.ts")).agentsValidateMain(rest.slice(1))
      break
    case "help":
    case "--help":
      process.stdout.write(`${USAGE}\n`)
      return 0
  }
  process.stderr.write(`kintsugi: unknown command "${argv.join(" ")}"\n${USAGE}\n`)
  return 2
}

// No top-level await: the file can also be bundled to bytecode for a faster job-child start.
void main(process.argv.slice(2)).then((code) => {
  if (code !== undefined) process.exit(code)
})
