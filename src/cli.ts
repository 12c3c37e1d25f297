#!/usr/bin/env bun
/** The `kintsugi` command: serve | run-job. The one composition root of the process. */
import { jobChildMain } from "./jobChild.ts"
import { serveMain } from "./http/serve.ts"

const USAGE = `usage: kintsugi <command>

commands:
  serve      serve the portal and API (PORT, HOST; default 127.0.0.1:7777)
  run-job    run one agent job: JSON envelope on stdin, NDJSON events on stdout`

const command = process.argv[2]
switch (command) {
  case "run-job":
    await jobChildMain()
    break
  case "serve":
  case undefined:
    await serveMain()
    break
  default:
    process.stderr.write(`kintsugi: unknown command "${command}"\n${USAGE}\n`)
    process.exit(2)
}
