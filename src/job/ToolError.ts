/** The model-visible tool failure, in a leaf module so the workspace and confinement code can use it without importing Tool.ts. */
import { Schema } from "effect"

/** A model-visible tool failure. `message` goes back to the model verbatim: never host secrets. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  message: Schema.String
}) {}
