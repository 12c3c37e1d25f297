/** One clear line for the start-up failures an operator meets most: the embedded database in use. */

/** The first line of a start-up failure, with what to do about it when the cause is a known one. */
export const explainStartFailure = (message: string): string =>
  /in use by process \d+/.test(message)
    ? `${message}: another kintsugi (serve?) has the embedded database open; stop it, or point both at one PostgreSQL with DATABASE_URL`
    : message
