/**
 * One agent: the editor (or the read-only view for built-ins and readers), save as a new version,
 * enable/disable, copy, delete, ZIP export and the job definition, all through AgentStore and
 * resolveAgentDefinition.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { AgentStore, type AgentView } from "../../agents/AgentStore.ts"
import { resolveAgentDefinition } from "../../agents/resolveAgentDefinition.ts"
import { jobModelFor } from "../../providers/jobModelFor.ts"
import { Evals } from "../../worker/evals/Evals.ts"
import { editorPage } from "../../../views/pages/agentEditor.ts"
import { copyMenu, enabledToggle, type CopyRefusal } from "../../../views/pages/agentHeader.ts"
import { agentReadOnlyPage } from "../../../views/pages/agentView.ts"
import { definitionPage, type DefinitionResult } from "../../../views/pages/definition.ts"
import { badRequest, type ApiError } from "../respond.ts"
import { filesOfForm, formFromFields, formFromPackage, placeProblems } from "../../../views/forms/agentForm.ts"
import { plainMessage } from "../../../views/forms/plainProblems.ts"
import type { PageContext } from "../../../views/layout.ts"
import { refusedSave } from "./agentPages.ts"
import { projects } from "./bindingPages.ts"
import { editorContext, offeredTools } from "./editorOptions.ts"
import { htmlResponse, isHtmx, noticeOf, PAGE_HEADERS, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

export const nameParam = (input: PortalInput): string => input.params["name"] ?? ""
const agentUrl = (name: string, rest = "") => `/agents/${encodeURIComponent(name)}${rest}`

/** `?version=` of an export: absent, or a positive integer. */
const versionQuery = (url: URL): Effect.Effect<number | undefined, ApiError> => {
  const raw = url.searchParams.get("version")
  if (raw === null) return Effect.succeed(undefined)
  const n = Number(raw)
  return Number.isInteger(n) && n > 0
    ? Effect.succeed(n)
    : Effect.fail(badRequest([{ path: "version", message: `"${raw}" is not a version number` }]))
}

/** An agent's main tab: the editor for managers of a custom agent, else the read-only view. */
const agentMainPage = (page: PageContext, agent: AgentView, notice: string | null, copy: CopyRefusal | null = null) =>
  Effect.gen(function* () {
    if (agent.builtin || page.viewer?.canManage !== true) return agentReadOnlyPage(page, agent, notice, copy)
    const options = yield* editorContext(agent)
    const form = formFromPackage(agent.package, offeredTools(options))
    return editorPage(page, { form, placed: placeProblems(form, agent.problems), agent, notice, checked: true, options, copy })
  })

export const agentPage = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agents/:name",
      portal.page("read", ({ url, page, params }) =>
        Effect.flatMap(
          Effect.flatMap(AgentStore, (s) => s.get(params["name"] ?? "")),
          (agent) => Effect.map(agentMainPage(page, agent, noticeOf(url, agent.name)), (p) => htmlResponse(p))
        )
      )
    )
    .post(
      "/agents/:name",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const { request, page, principal } = input
          const store = yield* AgentStore
          const agent = yield* store.get(nameParam(input))
          const form = formFromFields(input.form, agent.name)
          const files = filesOfForm(form)
          if (Either.isLeft(files)) return yield* refusedSave(request, page, form, files.left, agent)
          const note = input.form.get("changeNote")
          return yield* store
            .save(agent.name, { files: files.right }, principal.username, typeof note === "string" ? note.slice(0, 2000) : "")
            .pipe(
              // A gated version waits for its evals: start them now (docs/evals.md).
              Effect.tap(() => Effect.flatMap(Evals, (e) => e.kick)),
              Effect.map((saved) => {
                const gated = saved.gate !== undefined && saved.gate.version > agent.version && saved.gate.version !== agent.gate?.version
                return redirect(
                  request,
                  agentUrl(
                    saved.name,
                    gated
                      ? `?gated=${String(saved.gate?.version)}`
                      : saved.version === agent.version
                        ? `?unchanged=${String(saved.version)}`
                        : `?saved=${String(saved.version)}`
                  )
                )
              }),
              Effect.catchTag("AgentInvalid", (e) => refusedSave(request, page, form, e.problems, agent))
            )
        })
      )
    )
    .post(
      "/agents/:name/enabled",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).setEnabled(nameParam(input), input.form.get("enabled") === "true")
          return isHtmx(input.request) ? htmlResponse(enabledToggle(input.page, agent)) : redirect(input.request, agentUrl(agent.name))
        })
      )
    )
    .post(
      "/agents/:name/copy",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const raw = input.form.get("newName")
          const newName = typeof raw === "string" ? raw.trim() : ""
          const store = yield* AgentStore
          const refused = (problems: ReadonlyArray<string>, status: number) =>
            Effect.gen(function* () {
              const refusal: CopyRefusal = { name: newName, problems }
              if (isHtmx(input.request)) return htmlResponse(copyMenu(input.page, { name: nameParam(input) }, refusal), status)
              return htmlResponse(yield* agentMainPage(input.page, yield* store.get(nameParam(input)), null, refusal), status)
            })
          return yield* store.copy(nameParam(input), newName, input.principal.username).pipe(
            Effect.map((copy) => redirect(input.request, agentUrl(copy.name, `?copied=${encodeURIComponent(nameParam(input))}`))),
            Effect.catchTags({
              // Every problem of a copy is one of its name: the package itself is the saved agent's.
              AgentInvalid: (e) =>
                refused(
                  e.problems.map((p) => plainMessage(p.message)),
                  400
                ),
              AgentExists: () => refused([`an agent named "${newName}" already exists: choose another name`], 409),
              BuiltinReadOnly: () => refused([`"${newName}" is the name of a built-in agent: choose another name`], 409)
            })
          )
        })
      )
    )
    .post(
      "/agents/:name/delete",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          yield* (yield* AgentStore).remove(nameParam(input))
          return redirect(input.request, `/agents?deleted=${encodeURIComponent(nameParam(input))}`)
        })
      )
    )
    .get(
      "/agents/:name/export",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const version = yield* versionQuery(input.url)
          const name = nameParam(input)
          const zip = yield* (yield* AgentStore).exportZip(name, version)
          return new Response(zip, {
            headers: {
              ...PAGE_HEADERS,
              "content-type": "application/zip",
              "content-disposition": `attachment; filename="${name}${version === undefined ? "" : `-v${version}`}.zip"`
            }
          })
        })
      )
    )
    .get(
      "/agents/:name/definition",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const agent = yield* (yield* AgentStore).get(nameParam(input))
          const project = input.url.searchParams.get("project") ?? ""
          const result: DefinitionResult = yield* resolveAgentDefinition(agent.name).pipe(
            Effect.flatMap((definition) =>
              Effect.map(
                jobModelFor(agent.name, definition.thinking, project),
                (model): DefinitionResult => ({ ok: true, definition, model })
              )
            ),
            Effect.catchTag("AgentUnavailable", (e) =>
              Effect.succeed<DefinitionResult>({ ok: false, message: e.message, problems: e.problems })
            )
          )
          return htmlResponse(definitionPage(input.page, agent, result, yield* projects))
        })
      )
    )
