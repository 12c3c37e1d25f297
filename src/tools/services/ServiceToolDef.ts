/** What a service tool is (a leaf module: the tool lists and the registry both import it). */
import type { Schema } from "effect"

export interface ServiceToolDef {
  readonly name: string
  /** What the model is told the tool does. */
  readonly description: string
  /** The input, decoded by the kernel before the call and again by the service. */
  readonly params: Schema.Schema.AnyNoContext
  /** How long one call may take; default SERVICE_CALL_TIMEOUT_MS. */
  readonly timeoutMs?: number
  /** The call only reads (KernelTool.readOnly). */
  readonly readOnly?: boolean
  /** Read-only calls sharing a budget keep their call order (KernelTool.lane). */
  readonly lane?: string
}
