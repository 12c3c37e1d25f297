/**
 * What the model gets of an MCP tool: a checked input schema (object root, size and depth caps) and
 * the call's result as text (text blocks verbatim; images, audio and resources summarised), cut like
 * every tool result.
 */
import { truncateOutput } from "../truncate.ts"
import type { McpCallResult } from "./McpClient.ts"

/** Largest input schema passed to the model, as JSON. */
const MAX_SCHEMA_BYTES = 32 * 1024
/** Deepest nesting of objects and arrays in an input schema. */
const MAX_SCHEMA_DEPTH = 24
/** Longest tool description passed to the model. */
const MAX_DESCRIPTION_CHARS = 2000

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v)

const depthOf = (value: unknown, limit: number, depth = 0): number => {
  if (value === null || typeof value !== "object" || depth > limit) return depth
  let max = depth + 1
  for (const v of Array.isArray(value) ? value : Object.values(value)) {
    max = Math.max(max, depthOf(v, limit, depth + 1))
    if (max > limit) break
  }
  return max
}

/**
 * The input schema as the model will see it (root `$schema` dropped), or why it cannot be offered:
 * not an object schema, larger than MAX_SCHEMA_BYTES, deeper than MAX_SCHEMA_DEPTH.
 */
export const checkInputSchema = (schema: unknown): { readonly schema: Record<string, unknown> } | { readonly problem: string } => {
  if (!isObject(schema)) return { problem: "its input schema is not a JSON object" }
  const { $schema: _ignored, ...root } = schema
  if (root["type"] !== "object") return { problem: 'its input schema does not have type "object" at the root' }
  const json = JSON.stringify(root)
  if (Buffer.byteLength(json) > MAX_SCHEMA_BYTES) return { problem: `its input schema is larger than ${MAX_SCHEMA_BYTES / 1024} KiB` }
  if (depthOf(root, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH)
    return { problem: `its input schema is nested deeper than ${MAX_SCHEMA_DEPTH} levels` }
  // The text is root's own JSON (a copy without undefined members): parsing it gives an object back.
  return { schema: JSON.parse(json) as Record<string, unknown> }
}

/** A tool description for the model: control characters removed, capped. */
export const cleanDescription = (text: string): string => {
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, " ").trim()
  return clean.length > MAX_DESCRIPTION_CHARS ? `${clean.slice(0, MAX_DESCRIPTION_CHARS)}…` : clean
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

/** Approximate decoded size of base64 text. */
const base64Bytes = (data: string | undefined) => (data === undefined ? 0 : Math.floor((data.replace(/=+$/, "").length * 3) / 4))

const blockText = (block: Record<string, unknown>): string => {
  switch (block["type"]) {
    case "text":
      return str(block["text"]) ?? ""
    case "image":
    case "audio":
      return `[${String(block["type"])}: ${str(block["mimeType"]) ?? "unknown type"}, ${base64Bytes(str(block["data"]))} bytes, not shown]`
    case "resource": {
      const r = isObject(block["resource"]) ? block["resource"] : {}
      const text = str(r["text"])
      const size = text === undefined ? `${base64Bytes(str(r["blob"]))} bytes` : `${text.length} characters`
      return `[resource ${str(r["uri"]) ?? "(no uri)"} (${str(r["mimeType"]) ?? "unknown type"}), ${size}, not shown]`
    }
    case "resource_link":
      return `[resource link: ${str(block["uri"]) ?? "(no uri)"}${str(block["name"]) === undefined ? "" : ` (${str(block["name"])})`}]`
    default:
      return `[${String(block["type"])} content, not shown]`
  }
}

/** The result as text for the model, cut to the tool output limits. */
export const resultText = (result: McpCallResult): string => {
  const parts = result.content.map(blockText).filter((t) => t !== "")
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  const text = parts.length === 0 ? "(the tool returned no content)" : parts.join("\n")
  return truncateOutput(text, "ask the tool for less")
}
