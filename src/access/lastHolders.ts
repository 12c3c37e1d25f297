/**
 * The last-holder rules of user administration: a change may not leave an admin permission, or every
 * admin permission together, without an enabled holder — whoever the user is, the caller included.
 * Run inside the change's transaction (under its lock), against the rows as they are before it.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, type ParseResult, Schema } from "effect"
import { decodeRows, Num } from "../db/rowSchema.ts"
import { WouldLockOut } from "./errors.ts"

const counts = decodeRows(Schema.Struct({ n: Num }))

/**
 * Fails with WouldLockOut, naming the user and what would be lost, when `user` (holding `before`) may
 * not become `after`; `admin` lists the permissions that make an admin.
 */
export const refuseLockOut = <P extends string>(
  sql: SqlClient,
  admin: ReadonlyArray<P>,
  user: { readonly id: string; readonly username: string; readonly disabledAt: Date | null },
  before: ReadonlySet<P>,
  after: { readonly enabled: boolean; readonly permissions: ReadonlySet<P> }
): Effect.Effect<void, WouldLockOut | SqlError | ParseResult.ParseError> =>
  Effect.gen(function* () {
    if (user.disabledAt !== null) return
    const alone: Array<P> = []
    for (const p of admin) {
      if (!before.has(p) || (after.enabled && after.permissions.has(p))) continue
      const rows = yield* counts(sql`SELECT count(*)::int AS n FROM admin.user_permission p JOIN admin.app_user u ON u.id = p.user_id
        WHERE p.permission = ${p} AND u.disabled_at IS NULL AND u.id <> ${user.id}`)
      if ((rows[0]?.n ?? 0) === 0) alone.push(p)
    }
    if (alone.length > 0) {
      return yield* Effect.fail(
        new WouldLockOut({ message: `${user.username} is the last enabled user with ${alone.join(", ")}; grant it to someone else first` })
      )
    }
    const holdsAll = (set: ReadonlySet<P>) => admin.every((p) => set.has(p))
    if (!holdsAll(before) || (after.enabled && holdsAll(after.permissions))) return
    // Each permission held by someone is not enough: users are managed only by a holder of all of them.
    const admins = yield* counts(sql`SELECT count(*)::int AS n FROM admin.app_user u
      WHERE u.disabled_at IS NULL AND u.id <> ${user.id}
        AND (SELECT count(*) FROM admin.user_permission p WHERE p.user_id = u.id AND p.permission IN ${sql.in(admin)}) = ${admin.length}`)
    if ((admins[0]?.n ?? 0) > 0) return
    return yield* Effect.fail(
      new WouldLockOut({
        message: `${user.username} is the last enabled user with every admin permission (${admin.join(" and ")}); without one nobody can manage users: make someone else an admin first`
      })
    )
  })
