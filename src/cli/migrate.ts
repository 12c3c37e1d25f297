/** `kintsugi migrate`: applies pending migrations to DATABASE_URL, else the embedded database. */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import { exitWith } from "./exit.ts"

export const migrateCommand = Command.make("migrate", {}, () =>
  Effect.promise(async () => {
    const [{ migrateMain }, { UnmigratedDatabaseLive }] = await Promise.all([import("../db/migrateCommand.ts"), import("../main.ts")])
    return migrateMain({ layer: UnmigratedDatabaseLive })
  }).pipe(Effect.flatMap(exitWith))
).pipe(Command.withDescription("Apply the pending database migrations (DATABASE_URL, else the embedded database in KINTSUGI_DATA_DIR)."))
