/**
 * A server process for tests that measure it from outside (its RSS): the app over a fresh test
 * database (the one harness, testApp.ts), served by `listen` exactly as `kintsugi serve` does. Prints
 * `READY <port> <admin token>` when listening; stops on SIGTERM.
 */
import { listen } from "../../src/http/serve.ts"
import { makeTestApp } from "./testApp.ts"

const made = await makeTestApp({ appLog: (line) => process.stderr.write(`${line}\n`) })
const token = await made.addUser("admin", "a long test password", ["agents.manage", "providers.manage"])
const server = listen(made.app, { hostname: "127.0.0.1", port: 0 })
process.stdout.write(`READY ${server.port} ${token}\n`)
process.on("SIGTERM", () => {
  void server
    .stop(true)
    .then(() => made.dispose())
    .then(() => process.exit(0))
})
