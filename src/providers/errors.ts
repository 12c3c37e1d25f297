/** Domain errors of providers, bindings and MCP servers. */
import { Schema } from "effect"
import { Problem } from "../contract/Problem.ts"

export class ProviderNotFound extends Schema.TaggedError<ProviderNotFound>()("ProviderNotFound", { id: Schema.String }) {
  override get message(): string {
    return `no LLM provider "${this.id}"`
  }
}
export class ProviderInvalid extends Schema.TaggedError<ProviderInvalid>()("ProviderInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the provider configuration has problems"
  }
}
export class ProviderExists extends Schema.TaggedError<ProviderExists>()("ProviderExists", { id: Schema.String }) {
  override get message(): string {
    return `an LLM provider "${this.id}" already exists`
  }
}
export class ProviderInUse extends Schema.TaggedError<ProviderInUse>()("ProviderInUse", {
  id: Schema.String,
  agents: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `LLM provider "${this.id}" is bound to ${this.agents.join(", ")}`
  }
}
export class BindingInvalid extends Schema.TaggedError<BindingInvalid>()("BindingInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the model binding has problems"
  }
}
export class BindingNotFound extends Schema.TaggedError<BindingNotFound>()("BindingNotFound", {
  agent: Schema.String,
  projectId: Schema.String
}) {
  override get message(): string {
    return this.projectId === ""
      ? `agent "${this.agent}" has no model binding (Admin → LLM Providers → agent bindings)`
      : `agent "${this.agent}" has no model binding for project "${this.projectId}" nor an installation default`
  }
}
export class McpServerNotFound extends Schema.TaggedError<McpServerNotFound>()("McpServerNotFound", { name: Schema.String }) {
  override get message(): string {
    return `no MCP server "${this.name}"`
  }
}
export class McpServerInvalid extends Schema.TaggedError<McpServerInvalid>()("McpServerInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the MCP server configuration has problems"
  }
}
export class McpUnreachable extends Schema.TaggedError<McpUnreachable>()("McpUnreachable", {
  name: Schema.String,
  problem: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `cannot list the tools of MCP server "${this.name}": ${this.problem}`
  }
}
