/**
 * Encryption at rest for provider keys and MCP header values: AES-256-GCM, a fresh 96-bit IV per
 * value, stored as `v1:<base64 iv|tag|ciphertext>`. The key comes from KINTSUGI_SECRET_KEY, else from a
 * file generated once beside the database (`<data dir>/secret.key`, mode 0600) — never the database.
 */
import { Config, Context, Effect, Layer, Redacted, Schema } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import path from "node:path"

export class SecretKeyError extends Schema.TaggedError<SecretKeyError>()("SecretKeyError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

export class SecretBox extends Context.Tag("providers/SecretBox")<
  SecretBox,
  {
    readonly seal: (plaintext: string) => string
    /** Dies when the value was sealed with another key or was tampered with: the store is broken. */
    readonly open: (sealed: string) => string
  }
>() {}

const PREFIX = "v1:"

/** Why a sealed value does not open: the key differs from the one that sealed it (or the value was altered). */
export const WRONG_KEY =
  "a stored secret cannot be opened with this secret key: KINTSUGI_SECRET_KEY (else <data dir>/secret.key) is not the key the secrets were stored with"

/** Box operations over a 32-byte key. */
export const makeSecretBox = (key: Uint8Array): SecretBox["Type"] => ({
  seal: (plaintext) => {
    const iv = randomBytes(12)
    const cipher = createCipheriv("aes-256-gcm", key, iv)
    const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64")
  },
  open: (sealed) => {
    if (!sealed.startsWith(PREFIX)) throw new Error("not a sealed secret")
    const raw = Buffer.from(sealed.slice(PREFIX.length), "base64")
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    try {
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
    } catch {
      // The raw crypto error ("unable to authenticate data") names neither cause nor fix.
      throw new Error(WRONG_KEY)
    }
  }
})

/** Header values (MCP servers, provider gateways) are sealed as one JSON object. */
export const sealHeaders = (box: SecretBox["Type"], headers: Readonly<Record<string, string>>): string => box.seal(JSON.stringify(headers))
/** The sealed headers, or {} when none were stored. */
export const openHeaders = (box: SecretBox["Type"], sealed: string | null): Record<string, string> =>
  sealed === null ? {} : (JSON.parse(box.open(sealed)) as Record<string, string>)

/** A configured key of any length is stretched to 32 bytes with SHA-256. */
const keyFrom = (text: string): Uint8Array => createHash("sha256").update(text).digest()

/** Where the generated key file lives in a data dir. */
export const secretKeyPath = (dataDir: string): string => path.join(dataDir, "secret.key")

/** The generated key file: created once with mode 0600; an existing file readable by others is refused. */
const keyFile = (dataDir: string): Effect.Effect<Uint8Array, SecretKeyError> =>
  Effect.try({
    try: () => {
      const file = secretKeyPath(dataDir)
      if (!existsSync(file)) {
        mkdirSync(dataDir, { recursive: true })
        writeFileSync(file, randomBytes(32).toString("base64"), { mode: 0o600, flag: "wx" })
      }
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600)
      return keyFrom(readFileSync(file, "utf8").trim())
    },
    catch: (e) =>
      new SecretKeyError({
        message: `cannot read or create the secret key file in the data dir: ${e instanceof Error ? e.message : String(e)}`,
        cause: e
      })
  })

export const SecretBoxLive: Layer.Layer<SecretBox, SecretKeyError> = Layer.effect(
  SecretBox,
  Effect.gen(function* () {
    const configured = yield* Config.option(Config.redacted("KINTSUGI_SECRET_KEY")).pipe(
      Effect.mapError((e) => new SecretKeyError({ message: `invalid KINTSUGI_SECRET_KEY: ${e.message}`, cause: e }))
    )
    if (configured._tag === "Some" && Redacted.value(configured.value).trim() !== "") {
      return makeSecretBox(keyFrom(Redacted.value(configured.value)))
    }
    const dataDir = yield* Config.string("KINTSUGI_DATA_DIR").pipe(
      Config.withDefault(".kintsugi"),
      Effect.mapError((e) => new SecretKeyError({ message: e.message, cause: e }))
    )
    return makeSecretBox(yield* keyFile(dataDir))
  })
)
