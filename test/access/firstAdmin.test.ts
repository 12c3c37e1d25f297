/**
 * The first start on an empty database: the admin's generated password is printed once with the ways
 * that really change it (the account page's password form and `kintsugi users password admin`), and
 * the first of them works with the printed password.
 */
import { expect, setDefaultTimeout, test } from "bun:test"
import { ConfigProvider, Effect } from "effect"
import { Access, AccessLive } from "../../src/access/Access.ts"
import { ensureAdmin } from "../../src/http/serve.ts"
import { useTestDb } from "../support/db.ts"

setDefaultTimeout(30_000)

const db = useTestDb(AccessLive)

test("the first start's message names the real ways to change the generated password, and they work", async () => {
  const printed: Array<string> = []
  const write = process.stdout.write.bind(process.stdout)
  process.stdout.write = ((chunk: string | Uint8Array) => (printed.push(String(chunk)), true)) as typeof process.stdout.write
  try {
    await db.run(ensureAdmin.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))))
  } finally {
    process.stdout.write = write
  }
  const text = printed.join("")
  const password = /created user admin with password (\S+)/.exec(text)?.[1]
  expect(password).toBeDefined()
  expect(text).toContain("change it after signing in, at /account/password, or with: kintsugi users password admin")
  expect(text).not.toContain("users add")
  const session = await db.run(Effect.flatMap(Access, (a) => a.signIn("admin", password!)))
  await db.run(Effect.flatMap(Access, (a) => a.changePassword("admin", password!, "the admin's own password", session.token)))
  await db.run(Effect.flatMap(Access, (a) => a.signIn("admin", "the admin's own password")))
})
