/**
 * Projects in the portal through the Projects service (the API's): the list, create, and a project's
 * page with its settings and bindings; and the home page's first-run checklist.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { ProjectInput, Projects } from "../../worker/Projects.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { NotFound } from "../errors.ts"
import { homePage } from "../../../views/pages/home.ts"
import { newProjectPage, projectHref, projectPage, projectsPage, type ProjectFormValues } from "../../../views/pages/projects.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalRunner, PostedForm } from "./portalRoute.ts"

const text = (form: PostedForm, name: string): string => {
  const v = form.get(name)
  return typeof v === "string" ? v.trim() : ""
}

const blank: ProjectFormValues = { id: "", name: "", root: "" }

/** What the first-run checklist counts. */
export const checklist = Effect.gen(function* () {
  const providers = (yield* (yield* ProviderStore).list).length
  const bindings = yield* (yield* Bindings).list()
  const jobRoots = (yield* JobRoots).boundary.jobRoots.length
  const projects = (yield* (yield* Projects).list).length
  return { providers, boundAgents: new Set(bindings.map((b) => b.agentName)).size, jobRoots, projects }
})

export const projectPages = (portal: PortalRunner) =>
  new Elysia()
    .get("/home", portal.page("read", ({ page }) => Effect.map(checklist, (c) => htmlResponse(homePage(page, c)))))
    .get(
      "/projects",
      portal.page("read", ({ page, url }) => Effect.map(Effect.flatMap(Projects, (p) => p.list), (list) => htmlResponse(projectsPage(page, list, noticeOf(url, "")))))
    )
    .get("/projects/-/new", portal.page("agents.manage", ({ page }) => Effect.succeed(htmlResponse(newProjectPage(page, blank, [])))))
    .post(
      "/projects",
      portal.action("agents.manage", ({ request, page, form }) =>
        Effect.gen(function* () {
          const values: ProjectFormValues = { id: text(form, "id"), name: text(form, "name"), root: text(form, "root") }
          const refused = (problems: ReadonlyArray<Problem>) => Effect.succeed(htmlResponse(newProjectPage(page, values, problems), 400))
          const input = { id: values.id, name: values.name, ...(values.root === "" ? {} : { root: values.root }) }
          const decoded = decodeAll(ProjectInput)(input)
          if (Either.isLeft(decoded)) return yield* refused(decoded.left)
          const projects = yield* Projects
          return yield* projects.create(decoded.right).pipe(
            Effect.map((project) => redirect(request, projectHref(project.id, "?project-created=1"))),
            Effect.catchTags({
              ProjectExists: (e) => refused([{ path: "id", message: e.message }]),
              ProjectRootInvalid: (e) => refused(e.problems)
            })
          )
        })
      )
    )
    .get(
      "/projects/:id",
      portal.page("read", ({ page, url, params }) =>
        Effect.gen(function* () {
          const project = yield* Effect.mapError((yield* Projects).get(params["id"] ?? ""), (e) => new NotFound({ message: e.message }))
          const bindings = (yield* (yield* Bindings).list()).filter((b) => b.projectId === project.id)
          return htmlResponse(projectPage(page, { project, bindings, notice: noticeOf(url, project.name) }))
        })
      )
    )
