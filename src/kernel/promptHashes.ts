/**
 * The hashes of a job's prompt prefix, as a transcript turn records them and a job's `history` names
 * them: the SHA-256 of the system prompt as sent, and of the JSON of the tool definitions as sent.
 */
import type { Tool } from "@earendil-works/pi-ai"
import { createHash } from "node:crypto"

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")

export interface PromptHashes {
  readonly instructionsHash: string
  readonly toolsHash: string
}

export const promptHashes = (systemPrompt: string, tools: ReadonlyArray<Tool>): PromptHashes => ({
  instructionsHash: sha256(systemPrompt),
  toolsHash: sha256(JSON.stringify(tools))
})
