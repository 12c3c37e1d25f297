/**
 * ajv's two engines (draft-07 and 2020-12) in a module of their own that imports nothing of ours:
 * jsonSchema.ts (itself loaded at a job's first output check) validates with them, and the job child's
 * bundle builds this module into a bytecode bundle of its own (jobChildBuild.ts LAZY_LEAVES), so a child
 * loads ajv only when a job checks an output against its schema.
 */
export { default as Ajv } from "ajv"
export { default as Ajv2020 } from "ajv/dist/2020"
