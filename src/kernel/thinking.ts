/**
 * Thinking-level policy. The job's level overrides the agent's default; a level the model lacks is
 * clamped to the NEAREST level it has on off < minimal < … < max, `off` included (ties: the lower one),
 * and the span records which way it moved.
 */
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { THINKING_LEVELS } from "../contract/AgentDefinition.ts"

/** Which way the level moved from the request to what the model has. */
export type ThinkingClamp = "up" | "down" | "none"

export interface ThinkingChoice {
  readonly requested: ThinkingLevel
  readonly effective: ThinkingLevel
  readonly clamped: ThinkingClamp
}

const rank = (l: ThinkingLevel): number => THINKING_LEVELS.indexOf(l)

/**
 * `supported` in any order; an empty list means the model cannot think (only "off").
 *
 * Rule: a supported request is kept. Otherwise the model's level fewest steps away wins, `off` being a
 * level like any other; on a tie the lower one (cheaper, never a budget surprise).
 */
export const chooseThinking = (requested: ThinkingLevel, supported: ReadonlyArray<ThinkingLevel>): ThinkingChoice => {
  const levels = supported.length === 0 ? (["off"] as const) : supported
  if (levels.includes(requested)) return { requested, effective: requested, clamped: "none" }
  let best: ThinkingLevel = levels[0]!
  for (const l of levels) {
    const d = Math.abs(rank(l) - rank(requested))
    const bestD = Math.abs(rank(best) - rank(requested))
    if (d < bestD || (d === bestD && rank(l) < rank(best))) best = l
  }
  return { requested, effective: best, clamped: rank(best) > rank(requested) ? "up" : "down" }
}
