/**
 * The one test harness for the app: `makeAppLive` (src/main.ts, the composition `AppLive` is made
 * of) over a fresh test database, with a random in-memory secret key and test job roots, plus the
 * HTTP app on that runtime. useApi (api.ts), useApp (appHarness.ts), the portal's startPortal and the
 * edge server all build on it.
 */
import { Effect, Layer, type ConfigProvider, type LogLevel } from "effect"
import { randomBytes } from "node:crypto"
import { Access, PasswordHashCost, type Permission } from "../../src/access/Access.ts"
import type { Db, DbError } from "../../src/db/Db.ts"
import { makeApp } from "../../src/http/app.ts"
import { makeAppLive, makeRuntime } from "../../src/main.ts"
import { makeSecretBox, SecretBox, type SecretKeyError } from "../../src/providers/SecretBox.ts"
import type { JobRoots, JobRootsInvalid } from "../../src/worker/JobRoots.ts"
import type { SqlClient } from "@effect/sql/SqlClient"
import { testDbLayer } from "./db.ts"
import { testJobRoots } from "./jobRoots.ts"

export type TestRuntime = Awaited<ReturnType<typeof makeRuntime>>

export interface TestAppOptions {
  /** Default: a fresh test database (testDbLayer). */
  readonly db?: Layer.Layer<Db, DbError>
  /** Default: a random in-memory key (the live layer would read or create a key file). */
  readonly secrets?: Layer.Layer<SecretBox, SecretKeyError>
  /** Default: testJobRoots(). */
  readonly jobRoots?: Layer.Layer<JobRoots, JobRootsInvalid, SqlClient>
  /** Run the worker loops in the runtime, logging to `log`. */
  readonly worker?: { readonly log?: (line: string) => void }
  readonly log?: (line: string) => void
  readonly logLevel?: LogLevel.LogLevel
  readonly config?: ConfigProvider.ConfigProvider
}

/** A random in-memory key: the default layer would read or create a key file in the working directory. */
export const testSecrets = (): Layer.Layer<SecretBox> => Layer.succeed(SecretBox, makeSecretBox(randomBytes(32)))

/** Password hashes at argon2id's least cost: a test signs in and out hundreds of times, and checks no hash's strength. */
const testPasswordHashCost = Layer.succeed(PasswordHashCost, { memoryCost: 1024, timeCost: 1 })

/** The app's layer as the server builds it (makeAppLive), over the test parts. */
export const testAppLayer = (options: TestAppOptions = {}) =>
  Layer.provide(
    makeAppLive(options.db ?? testDbLayer(), {
      secrets: options.secrets ?? testSecrets(),
      jobRoots: options.jobRoots ?? testJobRoots(),
      ...(options.worker === undefined ? {} : { worker: options.worker }),
      ...(options.log === undefined ? {} : { log: options.log }),
      ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
      ...(options.config === undefined ? {} : { config: options.config })
    }),
    testPasswordHashCost
  )

/** The runtime of `testAppLayer(options)`, built (a database that cannot start fails here). */
export const makeTestAppRuntime = (options: TestAppOptions = {}): Promise<TestRuntime> => makeRuntime(testAppLayer(options))

export interface TestApp {
  readonly runtime: TestRuntime
  readonly app: ReturnType<typeof makeApp>
  /** Adds a user with `password` and these permissions; resolves to a new API token of theirs. */
  readonly addUser: (username: string, password: string, permissions: ReadonlyArray<Permission>) => Promise<string>
  readonly dispose: () => Promise<void>
}

/** The runtime and the HTTP app on it; `appLog` gets the app's defects (default: the runtime's logger). */
export const makeTestApp = async (
  options: TestAppOptions & { readonly appLog?: (line: string) => void; readonly allowedHosts?: ReadonlyArray<string> } = {}
): Promise<TestApp> => {
  const runtime = await makeTestAppRuntime(options)
  const app = makeApp({
    runtime,
    ...(options.appLog === undefined ? {} : { log: options.appLog }),
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts })
  })
  return {
    runtime,
    app,
    addUser: (username, password, permissions) =>
      runtime.runPromise(
        Effect.flatMap(Access, (a) =>
          Effect.zipRight(a.addUser(username, password, permissions), a.issueToken(username, `${username}-test`))
        )
      ),
    dispose: () => runtime.dispose()
  }
}
