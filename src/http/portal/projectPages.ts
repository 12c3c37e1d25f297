/**
 * Projects in the portal through the Projects service (the API's): the list, create, and a project's
 * page with its settings (editable: name, root, resource limits, transcripts and their retention) and bindings; and the home page's
 * first-run checklist.
 */
import { makeSandbox, sandboxConfig, sandboxName } from "../../tools/Sandbox.ts"
import { DEFAULT_RESOURCES, type JobResources } from "../../tools/jobResources.ts"
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import { JobRoots } from "../../worker/JobRoots.ts"
import { ProjectInput, Projects, ProjectSettings, type Project } from "../../worker/Projects.ts"
import { Workspaces } from "../../worker/workspaces/Workspaces.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { NotFound } from "../errors.ts"
import { homePage } from "../../../views/pages/home.ts"
import {
  newProjectPage,
  projectBody,
  projectHref,
  projectPage,
  projectsPage,
  type ProjectFormValues,
  type ProjectPageProps
} from "../../../views/pages/projects.ts"
import { htmlResponse, inPlace, noticeOf, noticeText, pageOrBody, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner, PostedForm } from "./portalRoute.ts"

const text = (form: PostedForm, name: string): string => {
  const v = form.get(name)
  return typeof v === "string" ? v.trim() : ""
}

const blank: ProjectFormValues = { id: "", name: "", root: "" }

const RESOURCE_KEYS: ReadonlyArray<keyof JobResources> = ["memoryMb", "processes", "cpuSec", "tmpMb", "outDirMb"]

/**
 * The resource fields for the API's schema: empty ones left out (the server's setting), decimal
 * numbers as numbers, anything else as typed so the schema refuses it at its field.
 */
const resourcesInput = (typed: Readonly<Partial<Record<keyof JobResources, string>>>): Record<string, unknown> =>
  Object.fromEntries(
    RESOURCE_KEYS.flatMap((k) => {
      const v = typed[k] ?? ""
      if (v === "") return []
      return [[k, /^[+-]?\d+(\.\d+)?$/.test(v) ? Number(v) : v]]
    })
  )

/** The server's own job resources, as the job child reads them (the same environment). */
const serverResources: Effect.Effect<JobResources> = Effect.map(sandboxConfig, (c) => c.resources ?? DEFAULT_RESOURCES)

/** What the first-run checklist counts, and the sandbox in force. */
const checklist = Effect.gen(function* () {
  const providers = (yield* (yield* ProviderStore).list).length
  const bindings = yield* (yield* Bindings).list()
  const jobRoots = (yield* JobRoots).boundary.jobRoots
  const workspaces = (yield* (yield* Workspaces).list).length
  const projects = (yield* (yield* Projects).list).length
  // The probe ran at start-up; its answer is kept for the life of the process.
  const status = yield* makeSandbox(yield* sandboxConfig).status
  const sandbox = { name: sandboxName(status), ...(status._tag === "Unavailable" ? { reason: status.reason } : {}) }
  return { providers, boundAgents: new Set(bindings.map((b) => b.agentName)).size, jobRoots, workspaces, projects, sandbox }
})

const projectOf = (input: PortalInput) =>
  Effect.mapError(
    Effect.flatMap(Projects, (p) => p.get(input.params["id"] ?? "")),
    (e) => new NotFound({ message: e.message })
  )

/** A project's page props: its bindings, the server's resources, and the settings form's values and problems. */
const pageProps = (project: Project, rest: Omit<ProjectPageProps, "project" | "bindings" | "server">) =>
  Effect.gen(function* () {
    const all = yield* (yield* Bindings).list()
    return {
      project,
      bindings: all.filter((b) => b.projectId === project.id),
      server: yield* serverResources,
      ...rest
    } satisfies ProjectPageProps
  })

/** Saves a project's name, root and resources: the API's schema and the service's root check, each problem at its field. */
const saveSettings = (input: PortalInput) =>
  Effect.gen(function* () {
    const project = yield* projectOf(input)
    const values: ProjectFormValues = {
      id: project.id,
      name: text(input.form, "name"),
      root: text(input.form, "root"),
      resources: Object.fromEntries(RESOURCE_KEYS.map((k) => [k, text(input.form, k)])),
      transcripts: text(input.form, "transcripts"),
      transcriptRetentionDays: text(input.form, "transcriptRetentionDays")
    }
    const refused = (problems: ReadonlyArray<Problem>) =>
      Effect.map(pageProps(project, { notice: null, values, problems }), (props) =>
        pageOrBody(
          input.request,
          () => projectPage(input.page, props),
          () => projectBody(input.page, props),
          400
        )
      )
    const resources = resourcesInput(values.resources ?? {})
    const days = values.transcriptRetentionDays ?? ""
    const decoded = decodeAll(ProjectSettings)({
      name: values.name,
      ...(values.root === "" ? {} : { root: values.root }),
      ...(Object.keys(resources).length === 0 ? {} : { resources }),
      ...(values.transcripts === undefined || values.transcripts === "" ? {} : { transcripts: values.transcripts }),
      ...(days === "" ? {} : { transcriptRetentionDays: /^\d+$/.test(days) ? Number(days) : days })
    })
    if (Either.isLeft(decoded)) return yield* refused(decoded.left)
    return yield* (yield* Projects).update(project.id, decoded.right).pipe(
      Effect.flatMap((saved) =>
        inPlace(
          input.request,
          projectHref(saved.id, "?project-saved=1"),
          Effect.map(pageProps(saved, { notice: noticeText("project-saved", "1", saved.name) }), (props) => projectBody(input.page, props))
        )
      ),
      Effect.catchTags({
        ProjectRootInvalid: (e) => refused(e.problems),
        ProjectNotFound: (e) => Effect.fail(new NotFound({ message: e.message }))
      })
    )
  })

export const projectPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/home",
      portal.page("read", ({ page }) => Effect.map(checklist, (c) => htmlResponse(homePage(page, c))))
    )
    .get(
      "/projects",
      portal.page("read", ({ page, url }) =>
        Effect.map(
          Effect.flatMap(Projects, (p) => p.list),
          (list) => htmlResponse(projectsPage(page, list, noticeOf(url, "")))
        )
      )
    )
    .get(
      "/projects/-/new",
      portal.page("agents.manage", ({ page }) => Effect.succeed(htmlResponse(newProjectPage(page, blank, []))))
    )
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
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const project = yield* projectOf(input)
          return htmlResponse(projectPage(input.page, yield* pageProps(project, { notice: noticeOf(input.url, project.name) })))
        })
      )
    )
    .post("/projects/:id", portal.action("agents.manage", saveSettings))
