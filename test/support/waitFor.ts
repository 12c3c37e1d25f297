/**
 * The one way a test waits: `until` re-checks a condition whenever an event it is given settles (a
 * process's exit, a request, a stream's chunk) and otherwise on a short bounded poll, and fails naming
 * what it awaited; `within` bounds a promise that should settle by itself. Nothing else in test/ sleeps.
 */

interface UntilOptions {
  /** What is awaited, in words: the failure says "gave up waiting for <what>". */
  readonly what: string
  /** How long before giving up; 10 s unless told. A bound on a hang, never a measurement. */
  readonly timeoutMs?: number
  /** Promises whose settling re-checks the condition at once (the poll still runs between them). */
  readonly events?: ReadonlyArray<PromiseLike<unknown>>
  /** The poll's interval; 10 ms unless told. */
  readonly everyMs?: number
}

const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_EVERY_MS = 10

/**
 * Resolves with the condition's first truthy value; rejects with "gave up waiting for <what>" after
 * `timeoutMs`, or with the condition's own error when it throws.
 */
export const until = <A>(
  condition: () => A | undefined | null | false | PromiseLike<A | undefined | null | false>,
  options: UntilOptions
): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const started = performance.now()
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    let settled = false
    let checking = false
    let again = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const finish = (f: () => void) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clearTimeout(timer)
      f()
    }
    const check = async (): Promise<void> => {
      if (settled) return
      if (checking) {
        again = true
        return
      }
      checking = true
      try {
        const value = await condition()
        if (value !== undefined && value !== null && value !== false) return finish(() => resolve(value as A))
      } catch (e) {
        return finish(() => reject(e))
      } finally {
        checking = false
      }
      if (performance.now() - started >= timeoutMs) {
        return finish(() => reject(new Error(`gave up waiting for ${options.what} (${timeoutMs} ms)`)))
      }
      if (again) {
        again = false
        return check()
      }
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(check, options.everyMs ?? DEFAULT_EVERY_MS)
    }
    for (const event of options.events ?? [])
      event.then(
        () => void check(),
        () => void check()
      )
    void check()
  })

/** `promise`, or a rejection naming `what` when it has not settled within `timeoutMs` (a bound on a hang). */
export const within = <A>(promise: PromiseLike<A>, options: { readonly what: string; readonly timeoutMs: number }): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up waiting for ${options.what} (${options.timeoutMs} ms)`)), options.timeoutMs)
  })
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer))
}
