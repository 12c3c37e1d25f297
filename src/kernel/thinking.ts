/**
 * Thinking-level policy. The job's level overrides the agent's default; a level the model lacks is
 * clamped DOWN to the nearest level it has (never silently costlier). Only when the model has no
 * level at or below the request does it go up, to the lowest level it has, and the choice is
 * recorded (`clampedUp`) so the job span can say so.
 */
import type { ThinkingLevel } from "../contract/AgentDefinition.ts"
import { THINKING_LEVELS } from "../contract/AgentDefinition.ts"

export interface ThinkingChoice {
  readonly requested: ThinkingLevel
  readonly effective: ThinkingLevel
  readonly clampedUp: boolean
}

/** `supported` in any order; an empty list means the model cannot think (only "off"). */
export const chooseThinking = (requested: ThinkingLevel, supported: ReadonlyArray<ThinkingLevel>): ThinkingChoice => {
  const rank = (l: ThinkingLevel) => THINKING_LEVELS.indexOf(l)
  const levels = (supported.length === 0 ? (["off"] as const) : supported).slice().sort((a, b) => rank(a) - rank(b))
  if (levels.includes(requested)) return { requested, effective: requested, clampedUp: false }
  const below = levels.filter((l) => rank(l) < rank(requested))
  const down = below[below.length - 1]
  if (down !== undefined) return { requested, effective: down, clampedUp: false }
  // Nothing at or below the request: the cheapest level the model has.
  return { requested, effective: levels[0] ?? "off", clampedUp: true }
}
