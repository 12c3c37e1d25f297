/**
 * LLM providers in the portal: list, add (custom or built-in), edit, delete — all through
 * ProviderStore, which decodes, checks and seals. A refused save re-renders the form with the
 * problems at their fields; the key typed is never put back into the page.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { Bindings } from "../../providers/Bindings.ts"
import { ProviderStore, type ProviderView } from "../../providers/ProviderStore.ts"
import {
  builtinProviderPage,
  customProviderPage,
  deleteMenu,
  probeResult,
  providersPage,
  type Placed
} from "../../../views/pages/providers.ts"
import type { PageContext } from "../../../views/layout.ts"
import type { ApiError } from "../respond.ts"
import {
  blankCustomForm,
  builtinInput,
  customFormFrom,
  customFormOf,
  customInput,
  placeByRow,
  type CustomForm
} from "../../../views/forms/providerForm.ts"
import { htmlResponse, isHtmx, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const FIELDS = ["id", "api", "baseUrl", "apiKey", "builtin", "models"]
const href = (id: string, q = "") => `/providers/${encodeURIComponent(id)}${q}`
const idParam = (i: PortalInput) => i.params["id"] ?? ""

const placeCustom = (form: CustomForm, problems: ReadonlyArray<Problem>): Placed =>
  placeByRow(
    problems,
    form.models.map((m) => m.key),
    FIELDS
  )

/** A builtin form refused: the catalog again, with the problems. */
const builtinRefused = (page: PageContext, f: PortalInput["form"], problems: ReadonlyArray<Problem>, existing: ProviderView | null) =>
  Effect.map(
    Effect.flatMap(ProviderStore, (s) => s.catalog),
    (catalog) => {
      const values = { id: existing?.id ?? String(f.get("id") ?? ""), builtin: String(f.get("builtin") ?? "") }
      return htmlResponse(builtinProviderPage(page, catalog, values, placeByRow(problems, [], FIELDS), existing), 400)
    }
  )

export const providerPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/providers",
      portal.page("read", ({ page, url }) =>
        Effect.map(
          Effect.flatMap(ProviderStore, (s) => s.list),
          (list) => htmlResponse(providersPage(page, list, noticeOf(url, "")))
        )
      )
    )
    .get(
      "/providers/-/new",
      portal.page("providers.manage", ({ page }) =>
        Effect.succeed(htmlResponse(customProviderPage(page, blankCustomForm(), new Map(), true)))
      )
    )
    .get(
      "/providers/-/builtin",
      portal.page("providers.manage", ({ page }) =>
        Effect.map(
          Effect.flatMap(ProviderStore, (s) => s.catalog),
          (catalog) => htmlResponse(builtinProviderPage(page, catalog, { id: "", builtin: catalog[0]?.id ?? "" }, new Map(), null))
        )
      )
    )
    .post(
      "/providers",
      portal.action("providers.manage", ({ request, page, form: f, principal }) =>
        Effect.gen(function* () {
          const store = yield* ProviderStore
          if (f.get("kind") === "builtin") {
            return yield* store.create(builtinInput(f), principal.username).pipe(
              Effect.map((p) => redirect(request, `/providers?added=${encodeURIComponent(p.id)}`)),
              Effect.catchTags({
                ProviderInvalid: (e) => builtinRefused(page, f, e.problems, null),
                ProviderExists: (e) => builtinRefused(page, f, [{ path: "id", message: e.message }], null)
              })
            )
          }
          const form = customFormFrom(f)
          const refused = (problems: ReadonlyArray<Problem>) =>
            htmlResponse(customProviderPage(page, form, placeCustom(form, problems), true), 400)
          return yield* store.create(customInput(form, f), principal.username).pipe(
            Effect.map((p) => redirect(request, `/providers?added=${encodeURIComponent(p.id)}`)),
            Effect.catchTags({
              ProviderInvalid: (e) => Effect.succeed(refused(e.problems)),
              ProviderExists: (e) => Effect.succeed(refused([{ path: "id", message: e.message }]))
            })
          )
        })
      )
    )
    .get(
      "/providers/:id",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const store = yield* ProviderStore
          const p = yield* store.get(idParam(input))
          if (p.kind === "builtin")
            return htmlResponse(builtinProviderPage(input.page, yield* store.catalog, { id: p.id, builtin: p.builtin ?? "" }, new Map(), p))
          return htmlResponse(customProviderPage(input.page, customFormOf(p), new Map(), false, noticeOf(input.url, p.id)))
        })
      )
    )
    .post(
      "/providers/:id",
      portal.action("providers.manage", (input) =>
        Effect.gen(function* () {
          const { request, page, form: f, principal } = input
          const store = yield* ProviderStore
          const existing = yield* store.get(idParam(input))
          const done = (p: ProviderView) => redirect(request, href(p.id, `?updated=${encodeURIComponent(p.id)}`))
          if (existing.kind === "builtin") {
            return yield* store.update(existing.id, builtinInput(f, existing.id), principal.username).pipe(
              Effect.map(done),
              Effect.catchTag("ProviderInvalid", (e) => builtinRefused(page, f, e.problems, existing))
            )
          }
          const form = customFormFrom(f, existing.id)
          return yield* store.update(existing.id, customInput(form, f), principal.username).pipe(
            Effect.map(done),
            Effect.catchTag(
              "ProviderInvalid",
              (e): Effect.Effect<Response, ApiError> =>
                Effect.succeed(htmlResponse(customProviderPage(page, form, placeCustom(form, e.problems), false), 400))
            )
          )
        })
      )
    )
    .post(
      "/providers/:id/delete",
      portal.action("providers.manage", (input) =>
        Effect.flatMap(ProviderStore, (store) =>
          store.remove(idParam(input)).pipe(
            Effect.map(() => redirect(input.request, `/providers?removed=${encodeURIComponent(idParam(input))}`)),
            // Refused while bound: the menu again, naming the bindings that hold the provider (409).
            Effect.catchTag("ProviderInUse", (e) =>
              Effect.gen(function* () {
                const heldBy = (yield* (yield* Bindings).list()).filter((b) => b.providerId === e.id)
                if (isHtmx(input.request)) return htmlResponse(deleteMenu(input.page, e.id, heldBy), 409)
                const p = yield* store.get(e.id)
                return htmlResponse(
                  p.kind === "builtin"
                    ? builtinProviderPage(
                        input.page,
                        yield* store.catalog,
                        { id: p.id, builtin: p.builtin ?? "" },
                        new Map(),
                        p,
                        null,
                        heldBy
                      )
                    : customProviderPage(input.page, customFormOf(p), new Map(), false, null, null, heldBy),
                  409
                )
              })
            )
          )
        )
      )
    )
    .post(
      "/providers/:id/test",
      portal.action("providers.manage", (input) =>
        Effect.gen(function* () {
          const store = yield* ProviderStore
          const p = yield* store.get(idParam(input))
          const result = yield* store.probe(p.id)
          // Stays on the page: htmx gets the result fragment; a plain post gets the page with it.
          if (isHtmx(input.request))
            return htmlResponse(
              probeResult(
                result,
                p.models.map((m) => m.id)
              )
            )
          if (p.kind === "builtin")
            return htmlResponse(
              builtinProviderPage(input.page, yield* store.catalog, { id: p.id, builtin: p.builtin ?? "" }, new Map(), p, result)
            )
          return htmlResponse(customProviderPage(input.page, customFormOf(p), new Map(), false, null, result))
        })
      )
    )
