/**
 * grep's pattern compilation as an Effect: the matcher itself lives in grepScan.ts (Effect-free, so the
 * search workers load it); a syntax error comes back as a ToolError naming RE2 syntax.
 */
import { Effect } from "effect"
import { buildMatcher, type LineMatcher, type MatcherOptions } from "./grepScan.ts"
import { ToolError } from "./Tool.ts"

export { requiredLiterals, type LineMatcher, type MatcherOptions } from "./grepScan.ts"

/** Compiles the model's pattern; a syntax error comes back as a ToolError naming RE2 syntax. */
export const compileMatcher = (pattern: string, opts: MatcherOptions): Effect.Effect<LineMatcher, ToolError> =>
  Effect.try({
    try: () => buildMatcher(pattern, opts),
    catch: (e) =>
      new ToolError({
        message: `invalid regular expression (RE2 syntax: no lookaround or backreferences): ${e instanceof Error ? e.message : String(e)}`
      })
  })
