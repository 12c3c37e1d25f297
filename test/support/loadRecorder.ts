/**
 * A preload (`bun --preload test/support/loadRecorder.ts …`) that names on stderr, as `loaded <path>`,
 * each module of the lazily loaded tool families as it is loaded: codemode, the MCP tools, the memory
 * and web tools, each kernel tool and the process runner. Used to check that a job child from the sources loads only what its job's tools need.
 */
import { plugin } from "bun"
import { readFileSync } from "node:fs"

plugin({
  name: "record-lazy-tool-loads",
  setup(build) {
    build.onLoad(
      {
        filter:
          /\/src\/tools\/(codemode\/codemode|mcp\/mcpTools|services\/serviceTools|read|ls|grep|find|write|edit|shell|git|ProcessRunner)\.ts$/
      },
      (args) => {
        process.stderr.write(`loaded ${args.path}\n`)
        return { contents: readFileSync(args.path, "utf8"), loader: "ts" }
      }
    )
  }
})
