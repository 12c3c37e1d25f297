/**
 * A server process for tests that measure it from outside (its RSS): the app over a fresh test
 * database, served by `listen` exactly as `kintsugi serve` does. Prints `READY <port> <admin token>`
 * when listening; stops on SIGTERM.
 */
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { Access } from "../../src/access/Access.ts"
import { makeApp } from "../../src/http/app.ts"
import { listen } from "../../src/http/serve.ts"
import { makeAppRuntime } from "../../src/main.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { testDbLayer } from "./db.ts"

const rt = await makeAppRuntime(testDbLayer(), { secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))) })
const token = await rt.runPromise(
  Effect.flatMap(Access, (a) => Effect.zipRight(a.addUser("admin", "a long test password", ["agents.manage", "providers.manage"]), a.issueToken("admin", "edge")))
)
const app = makeApp({ runtime: rt, healthy: async () => true, log: (line) => process.stderr.write(`${line}\n`) })
const server = listen(app, { hostname: "127.0.0.1", port: 0 })
process.stdout.write(`READY ${server.port} ${token}\n`)
process.on("SIGTERM", () => {
  void server.stop(true).then(() => rt.dispose()).then(() => process.exit(0))
})
