#!/usr/bin/env bun
/** The `kintsugi` command: serve | run-job. The one composition root of the process. */
import { jobChildMain } from "./jobChild.ts"
import { serveMain } from "./http/serve.ts"

const USAGE = `usage: kintsugi <command>

commands:
  serve      serve the portal and API (PORT, HOST; default 127.0.0.1:7777)
  run-job    run one agent job: JSON envelope on stdin, NDJSON events on stdout`

const main = async (command: string | undefined): Promise<void> => {
  switch (command) {
    case "run-job":
      return jobChildMain()
    case "serve":
    case undefined:
      return serveMain()
    default:
      process.stderr.write(`kintsugi: unknown command "${command}"\n${USAGE}\n`)
      process.exit(2)
  }
}

// No top-level await: the file can also be bundled to bytecode for a faster job-child start.
void main(process.argv[2])
