/**
 * Catalog, new agent, create, the editor's live preview and import. Every rule is the store's:
 * the form becomes package files, and AgentStore checks, saves or previews them.
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { AgentStore, type AgentView } from "../../agents/AgentStore.ts"
import type { Problem } from "../../contract/Problem.ts"
import type { CatalogPage } from "../../agents/AgentStore.ts"
import { catalogPage, catalogFragment, type CatalogProps } from "../../../views/pages/catalog.ts"
import type { Html } from "../../../views/html.ts"
import { editorPage, previewFragment } from "../../../views/pages/agentEditor.ts"
import { importDone, importPage, importResult, type ImportDone, type ImportResult } from "../../../views/pages/importPage.ts"
import { importUpload, importZipUpload, type ImportOutcome } from "../../agents/importUpload.ts"
import type { SkillStore } from "../../agents/SkillStore.ts"
import type { PageContext } from "../../../views/layout.ts"
import type { ApiError } from "../respond.ts"
import { blankForm, filesOfForm, formFromFields, mainFile, placeProblems, type AgentForm } from "../../../views/forms/agentForm.ts"
import { isFiltered, parseCatalogQuery } from "../../../views/forms/catalogQuery.ts"
import { editorContext } from "./editorOptions.ts"
import { htmlResponse, isHtmx, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalRunner } from "./portalRoute.ts"

/** A save that was refused: the problems at their fields (htmx: the preview fragment; else the whole editor). */
export const refusedSave = (
  request: Request,
  page: PageContext,
  form: AgentForm,
  problems: ReadonlyArray<Problem>,
  agent: AgentView | null
) =>
  Effect.map(editorContext(agent), (options) => {
    const placed = placeProblems(form, problems)
    if (isHtmx(request)) return htmlResponse(previewFragment(form, placed, page.processToolsUnconfined), 400)
    return htmlResponse(editorPage(page, { form, placed, agent, notice: null, checked: true, options }), 400)
  })

/** Name-level refusals (exists, reserved) as a problem on the name field. */
const nameProblem = (form: AgentForm, e: { readonly message: string }): Array<Problem> => [
  { path: `${mainFile(form)}#name`, message: e.message }
]

const IMPORT_MAX_FILES = 200

const importFailure = (request: Request, page: PageContext, result: ImportResult): Response =>
  isHtmx(request) ? htmlResponse(importResult(result), 400) : htmlResponse(importPage(page, result), 400)

/**
 * The catalog as sent, by everything it is rendered from: the store's page object (one generation's
 * answer to one query, the same object until the catalog changes), the query as asked, the notice,
 * fragment or page, and the page context (viewer with permissions and CSRF token, path). Rendering is
 * a pure function of these, so a request with the same ones is answered with the same bytes.
 */
const renderedCatalogs = new Map<string, { readonly page: CatalogPage; readonly body: Blob }>()
const MAX_RENDERED_CATALOGS = 64

const renderedCatalog = (page: PageContext, props: CatalogProps, fragment: boolean, render: () => Html): Blob => {
  const key = JSON.stringify([page, props.query, props.filtered, props.notice, fragment])
  const hit = renderedCatalogs.get(key)
  if (hit !== undefined && hit.page === props.page) return hit.body
  const body = new Blob([render().text])
  if (renderedCatalogs.size >= MAX_RENDERED_CATALOGS) renderedCatalogs.clear()
  renderedCatalogs.set(key, { page: props.page, body })
  return body
}

export const agentPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agents",
      portal.cachedPage("read", ({ request, url, page }) =>
        Effect.gen(function* () {
          const query = parseCatalogQuery(url.searchParams)
          const props = { page: yield* (yield* AgentStore).page(query), query, filtered: isFiltered(query), notice: noticeOf(url, "") }
          const fragment = isHtmx(request)
          return renderedCatalog(page, props, fragment, () => (fragment ? catalogFragment(props) : catalogPage(page, props)))
        })
      )
    )
    .get(
      "/agents/-/new",
      portal.page("agents.manage", ({ page }) =>
        Effect.map(editorContext(null), (options) => {
          const form = blankForm(options.kernelTools)
          return htmlResponse(
            editorPage(page, { form, placed: placeProblems(form, []), agent: null, notice: null, checked: false, options })
          )
        })
      )
    )
    .post(
      "/agents",
      portal.action("agents.manage", ({ request, page, form: fields, principal }) =>
        Effect.gen(function* () {
          const form = formFromFields(fields)
          const files = filesOfForm(form)
          if (Either.isLeft(files)) return yield* refusedSave(request, page, form, files.left, null)
          return yield* (yield* AgentStore).create({ files: files.right }, principal.username).pipe(
            Effect.map((agent) => redirect(request, `/agents/${encodeURIComponent(agent.name)}?created=${String(agent.version)}`)),
            Effect.catchTags({
              AgentInvalid: (e) => refusedSave(request, page, form, e.problems, null),
              AgentExists: (e) => refusedSave(request, page, form, nameProblem(form, e), null),
              BuiltinReadOnly: (e) => refusedSave(request, page, form, nameProblem(form, e), null)
            })
          )
        })
      )
    )
    .post(
      "/agents/-/preview",
      portal.action("read", ({ form: fields, page }) =>
        Effect.gen(function* () {
          const form = formFromFields(fields)
          const files = filesOfForm(form)
          const store = yield* AgentStore
          const problems: Array<Problem> = Either.isLeft(files) ? files.left : [...(yield* store.preview({ files: files.right })).problems]
          if (fields.get("_mode") === "create" && (yield* store.context).reservedNames.includes(form.name)) {
            problems.unshift(...nameProblem(form, { message: `"${form.name}" is a built-in agent's name: it is reserved` }))
          }
          return htmlResponse(previewFragment(form, placeProblems(form, problems), page.processToolsUnconfined))
        })
      )
    )
    .get(
      "/agents/-/import",
      portal.page("read", ({ page }) => Effect.succeed(htmlResponse(importPage(page, null))))
    )
    .post(
      "/agents/-/import",
      portal.action("agents.manage", ({ request, page, form, principal }) =>
        Effect.gen(function* () {
          const uploads = form.getAll("files").flatMap((f) => (typeof f === "string" || f.name === "" ? [] : [f]))
          if (uploads.length === 0) return importFailure(request, page, { message: "Choose a .zip or .md file first.", problems: [] })
          if (uploads.length > IMPORT_MAX_FILES)
            return importFailure(request, page, { message: `At most ${IMPORT_MAX_FILES} files at once.`, problems: [] })
          const zips = uploads.filter((f) => f.name.toLowerCase().endsWith(".zip"))
          if (zips.length > 0 && uploads.length > 1) {
            return importFailure(request, page, { message: "Upload one .zip on its own, or the package's .md files.", problems: [] })
          }
          // The form's checkbox: refuse Claude Code tools without an equivalent instead of dropping them.
          const options = { strict: form.get("strict") === "1" }
          const imported: Effect.Effect<ImportOutcome, ApiError, AgentStore | SkillStore> =
            zips[0] !== undefined
              ? Effect.flatMap(
                  Effect.promise(() => zips[0]!.bytes()),
                  (bytes) => importZipUpload(bytes, principal.username, options)
                )
              : Effect.flatMap(
                  Effect.promise(() => Promise.all(uploads.map(async (f) => ({ path: f.name, content: await f.bytes() })))),
                  (files) => importUpload(files, principal.username, options)
                )
          return yield* imported.pipe(
            Effect.map((r) => {
              const unchanged = r.kind === "agent" && !r.changed ? r.agent.version : null
              const href =
                r.kind === "agent"
                  ? `/agents/${encodeURIComponent(r.agent.name)}?${unchanged === null ? "imported" : "import-unchanged"}=${String(r.agent.version)}`
                  : `/agent-skills/${encodeURIComponent(r.skill.name)}`
              // Nothing adapted: straight to what was imported. Else the warnings, notes and tool mapping first.
              if (r.notes.length === 0 && r.warnings.length === 0) return redirect(request, href)
              const done: ImportDone = {
                kind: r.kind,
                name: r.kind === "agent" ? r.agent.name : r.skill.name,
                href,
                unchanged,
                notes: r.notes,
                warnings: r.warnings,
                toolMapping: r.toolMapping
              }
              return isHtmx(request) ? htmlResponse(importDone(done)) : htmlResponse(importPage(page, null, done))
            }),
            Effect.catchAll((e): Effect.Effect<Response, ApiError> => {
              switch (e._tag) {
                case "AgentInvalid":
                case "ImportRejected":
                case "SkillInvalid":
                  return Effect.succeed(importFailure(request, page, { message: e.message, problems: e.problems }))
                case "AgentExists":
                case "BuiltinReadOnly":
                case "SkillNameTaken":
                  return Effect.succeed(importFailure(request, page, { message: e.message, problems: [] }))
                default:
                  return Effect.fail(e)
              }
            })
          )
        })
      )
    )
