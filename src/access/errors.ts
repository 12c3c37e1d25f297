/** What user administration, sign-in and API tokens refuse: each failure a caller acts on, with its message. */
import { Schema } from "effect"

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {
  /** Set only after the right password: the account exists but is disabled. */
  disabled: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    return this.disabled === true ? "this user is disabled; ask an administrator" : "unknown user or wrong password"
  }
}
export class UserExists extends Schema.TaggedError<UserExists>()("UserExists", { username: Schema.String }) {
  override get message(): string {
    return `user "${this.username}" already exists`
  }
}
export class UnknownUser extends Schema.TaggedError<UnknownUser>()("UnknownUser", { username: Schema.String }) {
  override get message(): string {
    return `no user "${this.username}"`
  }
}
/** A username or password that breaks the rules; `field` names which. */
export class InvalidUser extends Schema.TaggedError<InvalidUser>()("InvalidUser", {
  message: Schema.String,
  field: Schema.Literal("username", "password")
}) {}
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", { message: Schema.String }) {}
export class TokenNotFound extends Schema.TaggedError<TokenNotFound>()("TokenNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no API token ${this.id}`
  }
}
/** The change would leave the installation without an enabled holder of a permission, or disable the caller. */
export class WouldLockOut extends Schema.TaggedError<WouldLockOut>()("WouldLockOut", { message: Schema.String }) {}
