/** What creating a workspace can fail with, and the request that creates one (decoded at the edge). */
import { Schema } from "effect"
import { Problem } from "../../contract/Problem.ts"
import { WorkspaceName } from "./workspaceFolder.ts"

/** Where the new folder goes and what it is called. */
export const NewWorkspace = Schema.Struct({
  /** One of the server's job roots, exactly as it lists them. */
  root: Schema.String.pipe(Schema.minLength(1, { message: () => "choose a job root" })),
  name: WorkspaceName
})
export type NewWorkspace = typeof NewWorkspace.Type

/** The portal's form: the folder, and where its sources come from (a git URL or an uploaded archive). */
export const NewWorkspaceForm = Schema.Struct({
  ...NewWorkspace.fields,
  source: Schema.Literal("git", "archive"),
  url: Schema.String
})

/** The request has problems (fields `root`, `name`, `url`, `archive`); nothing was created. */
export class WorkspaceInvalid extends Schema.TaggedError<WorkspaceInvalid>()("WorkspaceInvalid", { problems: Schema.Array(Problem) }) {
  override get message(): string {
    return this.problems.map((p) => `${p.path}: ${p.message}`).join("; ")
  }
}

/** Something of that name already exists in the job root; it was left as it was. */
export class WorkspaceExists extends Schema.TaggedError<WorkspaceExists>()("WorkspaceExists", { name: Schema.String }) {
  override get message(): string {
    return `a folder "${this.name}" already exists in this job root`
  }
}

/** The clone did not complete (git's error, the time or size cap); nothing was left behind. */
export class WorkspaceCloneFailed extends Schema.TaggedError<WorkspaceCloneFailed>()("WorkspaceCloneFailed", { problem: Schema.String }) {
  override get message(): string {
    return this.problem
  }
}
