/**
 * The shape every kernel tool has: a JSON-Schema parameter object the model sees, and an `execute`
 * Effect. Failures the model can fix (file not found, bad pattern, path outside the workspace) are
 * `ToolError`s: the kernel turns them into an error result for the model. Interruption means the
 * job is ending (abort, timeout): a tool must release what it holds (processes, descriptors).
 */
import { Effect, JSONSchema, Schema } from "effect"
import { problemsOf } from "../contract/Problem.ts"
import type { JobEvents } from "../job/JobEvents.ts"
import type { Limits } from "../job/Limits.ts"
import type { Workspace } from "../job/Workspace.ts"
import { ToolError } from "../job/ToolError.ts"

// Defined in leaf modules (no import cycle through Workspace.ts); re-exported where tools look for them.
export { ToolError } from "../job/ToolError.ts"
export type { ResolvedWorkspace } from "../job/confinement.ts"

/** Side events a tool reports through `JobEvents.emit` while it runs; the kernel stamps `seq` and `at`. */
export type ToolEvent =
  | {
      readonly type: "source.read"
      readonly tool: string
      /** Relative to workspace.root, forward slashes. */
      readonly path: string
      readonly firstLine: number
      /** null = to the end of the file. */
      readonly lastLine: number | null
    }
  | {
      readonly type: "output"
      /** Relative to workspace.outDir, forward slashes. */
      readonly path: string
    }

/**
 * The per-job services a tool call runs with: `Workspace` (the only way to files), `JobEvents`
 * (side events such as source.read and output, spans), `Limits` (progress for the idle watchdog,
 * the time left: a tool never plans beyond it).
 */
export type ToolServices = Workspace | JobEvents | Limits

/** What a tool hands back to the model. */
export interface ToolOutput {
  readonly text: string
}

export interface KernelTool {
  readonly name: string
  readonly description: string
  /** Plain JSON Schema (type: "object" at the root, no $ref root, no $schema). */
  readonly parameters: Record<string, unknown>
  /**
   * For process tools: the exact string `denyCommandPatterns` are matched against (the `bash -c`
   * command for shell, the joined argv for git). The kernel checks it before the call runs.
   */
  readonly commandOf?: (args: Record<string, unknown>) => string
  /**
   * The tool only reads (files, memory, the web): the kernel may run it at the same time as the
   * turn's other read-only calls. Absent = every call runs alone, after the calls before it.
   */
  readonly readOnly?: boolean
  /**
   * Read-only calls of one lane run one at a time, in call order: they share state that counts
   * calls as they arrive (a budget) or a pool a call may stop (grep's workers).
   */
  readonly lane?: string
  /**
   * Runs one call with arguments already validated against `parameters` by the kernel.
   * Must not throw: every failure is a `ToolError`.
   */
  readonly execute: (args: Record<string, unknown>) => Effect.Effect<ToolOutput, ToolError, ToolServices>
}

/**
 * Builds a `KernelTool` from an Effect Schema of its arguments: the JSON Schema the model sees is
 * derived from it (root inlined, `$schema` stripped), and every call is decoded with it, so invalid
 * arguments come back to the model as one error listing each problem with its path.
 */
export const defineTool = <A, I extends Record<string, unknown>>(def: {
  readonly name: string
  readonly description: string
  readonly params: Schema.Schema<A, I>
  readonly commandOf?: (args: A) => string
  readonly readOnly?: boolean
  readonly lane?: string
  readonly execute: (args: A) => Effect.Effect<ToolOutput, ToolError, ToolServices>
}): KernelTool => {
  const decode = Schema.decodeUnknownEither(def.params, { errors: "all", onExcessProperty: "error" })
  const parameters = toolJsonSchema(def.params)
  const decodeOrFail = (args: Record<string, unknown>) => {
    const r = decode(args)
    if (r._tag === "Right") return Effect.succeed(r.right)
    const problems = problemsOf(r.left)
      .map((p) => `  - ${p.path === "(root)" ? "(arguments)" : p.path}: ${p.message}`)
      .join("\n")
    return Effect.fail(new ToolError({ message: `Invalid arguments for tool "${def.name}":\n${problems}` }))
  }
  const commandOf = def.commandOf
  return {
    name: def.name,
    description: def.description,
    parameters,
    ...(def.readOnly === undefined ? {} : { readOnly: def.readOnly }),
    ...(def.lane === undefined ? {} : { lane: def.lane }),
    ...(commandOf === undefined
      ? {}
      : {
          commandOf: (args: Record<string, unknown>) => {
            const r = decode(args)
            // Undecodable arguments never run, so the deny check sees the raw JSON instead.
            return r._tag === "Right" ? commandOf(r.right) : JSON.stringify(args)
          }
        }),
    execute: (args) => Effect.flatMap(decodeOrFail(args), def.execute)
  }
}

/**
 * JSON Schema for a tool's arguments, shaped for every provider: an object root with every `$ref`
 * inlined (Anthropic drops a `$ref` root, some gateways reject `$defs`), no `$schema`, and no
 * `title` (Effect fills it with filter names like "between(1, 600)": noise in every prompt).
 */
const toolJsonSchema = (schema: Schema.Schema.Any): Record<string, unknown> => {
  const { $schema: _schema, $defs, ...root } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  const defs = ($defs ?? {}) as Record<string, unknown>
  /** A schema node: `$ref` replaced by its definition, `title` dropped, children walked. */
  const node = (value: unknown, depth: number): unknown => {
    if (Array.isArray(value)) return value.map((v) => node(v, depth + 1))
    if (value === null || typeof value !== "object" || depth > 64) return value
    const { $ref, ...own } = value as Record<string, unknown>
    const target = typeof $ref === "string" ? defs[$ref.replace("#/$defs/", "")] : undefined
    const { title: _title, ...merged } = { ...(target as Record<string, unknown> | undefined), ...own }
    return Object.fromEntries(
      Object.entries(merged).map(([k, v]) => [
        k,
        // `properties` maps names to schemas: its keys are field names (a field may be called "title").
        k === "properties" && v !== null && typeof v === "object"
          ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([f, s]) => [f, node(s, depth + 1)]))
          : node(v, depth + 1)
      ])
    )
  }
  return node(root, 0) as Record<string, unknown>
}
