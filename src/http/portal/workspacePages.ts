/**
 * Workspaces in the portal through the Workspaces service: the job roots and the workspaces in them,
 * and "New workspace" (agents.manage) from an uploaded archive (created before the answer) or a git
 * URL (checked and claimed before the answer, cloned after it; the list shows the clone running).
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { NewWorkspaceForm } from "../../worker/workspaces/workspaceErrors.ts"
import { Workspaces } from "../../worker/workspaces/Workspaces.ts"
import { newWorkspacePage, workspacesPage, type NewWorkspaceValues } from "../../../views/pages/workspaces.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const text = (input: PortalInput, name: string): string => {
  const v = input.form.get(name)
  return typeof v === "string" ? v.trim() : ""
}

const decodeForm = decodeAll(NewWorkspaceForm)

const jobRoots = Effect.map(JobRoots, (r) => r.boundary.jobRoots)

/** `?cloning=<name>` after a clone started; else the shared notices (`?added=<name>`). */
const noticeFor = (url: URL): string | null => {
  const cloning = url.searchParams.get("cloning")
  return cloning === null ? noticeOf(url, "") : `Cloning into ${cloning.slice(0, 100)}: it is listed below once the clone is done.`
}

const create = (input: PortalInput) =>
  Effect.gen(function* () {
    const values: NewWorkspaceValues = {
      root: text(input, "root"),
      name: text(input, "name"),
      source: text(input, "source"),
      url: text(input, "url")
    }
    const refused = (problems: ReadonlyArray<Problem>, status: number) =>
      Effect.map(jobRoots, (roots) => htmlResponse(newWorkspacePage(input.page, roots, values, problems), status))
    const decoded = decodeForm(values)
    const file = input.form.get("archive")
    const archive = typeof file === "string" || file === null || file.size === 0 ? undefined : file
    const missing: Array<Problem> =
      values.source === "archive" && archive === undefined ? [{ path: "archive", message: "choose a .zip or .tar.gz file" }] : []
    if (Either.isLeft(decoded) || missing.length > 0)
      return yield* refused([...(Either.isLeft(decoded) ? decoded.left : []), ...missing], 400)
    const target = { root: decoded.right.root, name: decoded.right.name }
    const workspaces = yield* Workspaces
    const started =
      decoded.right.source === "git" || archive === undefined
        ? Effect.as(workspaces.startClone(target, decoded.right.url), `/workspaces?cloning=${encodeURIComponent(target.name)}`)
        : Effect.flatMap(
            Effect.promise(() => archive.arrayBuffer()),
            (bytes) =>
              Effect.as(
                workspaces.fromArchive(target, { fileName: archive.name, bytes: new Uint8Array(bytes) }),
                `/workspaces?added=${encodeURIComponent(target.name)}`
              )
          )
    return yield* started.pipe(
      Effect.map((location) => redirect(input.request, location)),
      Effect.catchTags({
        WorkspaceInvalid: (e) => refused(e.problems, 400),
        WorkspaceExists: (e) => refused([{ path: "name", message: e.message }], 409)
      })
    )
  })

export const workspacePages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/workspaces",
      portal.page("read", ({ page, url }) =>
        Effect.gen(function* () {
          const workspaces = yield* Workspaces
          return htmlResponse(
            workspacesPage(page, {
              jobRoots: yield* jobRoots,
              workspaces: yield* workspaces.list,
              clones: yield* workspaces.clones,
              notice: noticeFor(url)
            })
          )
        })
      )
    )
    .get(
      "/workspaces/-/new",
      portal.page("agents.manage", ({ page }) =>
        Effect.map(jobRoots, (roots) =>
          htmlResponse(newWorkspacePage(page, roots, { root: roots[0] ?? "", name: "", source: "archive", url: "" }, []))
        )
      )
    )
    .post("/workspaces", portal.action("agents.manage", create))
