/**
 * The test-only loopback allowance of web_fetch: off by default, honoured only under NODE_ENV=test,
 * and anywhere else the server refuses to start (the app runtime fails to build, naming the setting).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { makeAppRuntime } from "../../src/main.ts"
import { makeSecretBox, SecretBox } from "../../src/providers/SecretBox.ts"
import { TEST_LOOPBACK_SETTING, webFetchAllowance } from "../../src/web/webServices.ts"
import { testDbLayer } from "../support/db.ts"
import { testJobRoots } from "../support/jobRoots.ts"

setDefaultTimeout(120_000)

const allowanceWith = (env: Record<string, string>) =>
  Effect.runPromiseExit(Effect.withConfigProvider(webFetchAllowance, ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe(`${TEST_LOOPBACK_SETTING}`, () => {
  test("unset: public addresses only, whatever NODE_ENV says", async () => {
    expect(await allowanceWith({})).toEqual(Exit.succeed(false))
    expect(await allowanceWith({ NODE_ENV: "test" })).toEqual(Exit.succeed(false))
    expect(await allowanceWith({ NODE_ENV: "test", [TEST_LOOPBACK_SETTING]: "false" })).toEqual(Exit.succeed(false))
  })

  test("set under NODE_ENV=test: loopback only", async () => {
    expect(await allowanceWith({ NODE_ENV: "test", [TEST_LOOPBACK_SETTING]: "1" })).toEqual(Exit.succeed("loopback"))
  })

  test("set anywhere else (production, development, no NODE_ENV, a malformed value): refused as a defect", async () => {
    for (const env of [{ NODE_ENV: "production" }, { NODE_ENV: "development" }, {}] as ReadonlyArray<Record<string, string>>) {
      const exit = await allowanceWith({ ...env, [TEST_LOOPBACK_SETTING]: "1" })
      expect(Exit.isFailure(exit) && String(Exit.causeOption(exit).pipe((c) => (c._tag === "Some" ? c.value : "")))).toContain(
        "test-only setting"
      )
    }
    // A value that is not a boolean counts as set: it never silently means "off" outside tests.
    expect(Exit.isFailure(await allowanceWith({ NODE_ENV: "production", [TEST_LOOPBACK_SETTING]: "yes please" }))).toBe(true)
  })

  test("the server's runtime does not start with it set outside tests", async () => {
    const config = ConfigProvider.fromMap(
      new Map([
        ["NODE_ENV", "production"],
        [TEST_LOOPBACK_SETTING, "1"]
      ])
    )
    const started = makeAppRuntime(testDbLayer(), {
      secrets: Layer.succeed(SecretBox, makeSecretBox(randomBytes(32))),
      jobRoots: testJobRoots(),
      config
    })
    await expect(started).rejects.toThrow(TEST_LOOPBACK_SETTING)
  })
})
