/** The job contract (the spec's runtime-sdk): schemas and types only; imports nothing but effect. */
export * from "./AgentDefinition.ts"
export * from "./AgentRuntime.ts"
export * from "./JobEvent.ts"
export * from "./JobSpec.ts"
export * from "./Problem.ts"
export * from "./ProviderConfig.ts"
