/** The Agent Builder's domain errors; the HTTP edge maps each tag to one status. */
import { Schema } from "effect"
import { Problem } from "../contract/Problem.ts"

export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", { name: Schema.String }) {
  override get message(): string {
    return `no agent "${this.name}"`
  }
}
export class AgentVersionNotFound extends Schema.TaggedError<AgentVersionNotFound>()("AgentVersionNotFound", {
  name: Schema.String,
  version: Schema.Number
}) {
  override get message(): string {
    return `agent "${this.name}" has no version ${this.version}`
  }
}
/** Format or installation problems: every one at once. */
export class AgentInvalid extends Schema.TaggedError<AgentInvalid>()("AgentInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return `the agent package has ${this.problems.length} problem${this.problems.length === 1 ? "" : "s"}`
  }
}
export class AgentExists extends Schema.TaggedError<AgentExists>()("AgentExists", { name: Schema.String }) {
  override get message(): string {
    return `an agent named "${this.name}" already exists`
  }
}
/** Built-in agents and skills are read-only and their names reserved. */
export class BuiltinReadOnly extends Schema.TaggedError<BuiltinReadOnly>()("BuiltinReadOnly", {
  kind: Schema.Literal("agent", "skill"),
  name: Schema.String
}) {
  override get message(): string {
    return this.kind === "agent"
      ? `"${this.name}" is a built-in agent: it is read-only and its name is reserved (copy it to change it)`
      : `"${this.name}" is a built-in shared skill: it is read-only and its name is reserved`
  }
}
/** The agent cannot run a job here; `reason` says why. */
export class AgentUnavailable extends Schema.TaggedError<AgentUnavailable>()("AgentUnavailable", {
  name: Schema.String,
  reason: Schema.Literal("unknown", "disabled", "member", "invalid", "version"),
  /** The version asked for (reason "version": it does not exist). */
  version: Schema.optionalWith(Schema.Number, { exact: true }),
  problems: Schema.Array(Problem)
}) {
  override get message(): string {
    switch (this.reason) {
      case "unknown":
        return `no agent "${this.name}"`
      case "disabled":
        return `agent "${this.name}" is disabled`
      case "member":
        return `agent "${this.name}" is a member agent, not a runtime agent`
      case "version":
        return `agent "${this.name}" has no version ${this.version ?? "?"}`
      case "invalid":
        return `agent "${this.name}" cannot run here: ${this.problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`
    }
  }
}
export class SkillNotFound extends Schema.TaggedError<SkillNotFound>()("SkillNotFound", { name: Schema.String }) {
  override get message(): string {
    return `no shared skill "${this.name}"`
  }
}
export class SkillVersionNotFound extends Schema.TaggedError<SkillVersionNotFound>()("SkillVersionNotFound", {
  name: Schema.String,
  version: Schema.Number
}) {
  override get message(): string {
    return `shared skill "${this.name}" has no version ${this.version}`
  }
}
export class SkillExists extends Schema.TaggedError<SkillExists>()("SkillExists", { name: Schema.String }) {
  override get message(): string {
    return `a shared skill named "${this.name}" already exists`
  }
}
/** The name is taken by a local or file skill of a read-only built-in agent: a shared skill of that name would break it. */
export class SkillNameTaken extends Schema.TaggedError<SkillNameTaken>()("SkillNameTaken", {
  name: Schema.String,
  agents: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `"${this.name}" is a skill of the built-in agent${this.agents.length === 1 ? "" : "s"} ${this.agents.join(", ")}: a shared skill of that name would break ${this.agents.length === 1 ? "it" : "them"}`
  }
}
export class SkillInUse extends Schema.TaggedError<SkillInUse>()("SkillInUse", {
  name: Schema.String,
  agents: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `shared skill "${this.name}" is used by ${this.agents.join(", ")}`
  }
}
export class SkillInvalid extends Schema.TaggedError<SkillInvalid>()("SkillInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the shared skill has problems"
  }
}
/** An import that could not be read at all (a ZIP that breaks a cap or holds bad names). */
export class ImportRejected extends Schema.TaggedError<ImportRejected>()("ImportRejected", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return "the import was refused"
  }
}
