/** Shared skills through SkillStore: list, view, create, edit, delete (refused, naming the agents, while in use). */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { SkillStore } from "../../agents/SkillStore.ts"
import type { Problem } from "../../contract/Problem.ts"
import { newSkillPage, skillBody, skillPage, skillsPage, type SkillFormValues } from "../../../views/pages/skills.ts"
import { skillVersionPage, skillVersionsBody, skillVersionsPage } from "../../../views/pages/skillVersions.ts"
import { diffView, type DiffProps } from "../../../views/pages/versions.ts"
import { diffFiles } from "../../../views/forms/lineDiff.ts"
import { badRequest, type ApiError } from "../respond.ts"
import { htmlResponse, inPlace, isHtmx, noticeOf, noticeText, pageOrBody, redirect } from "./pageResponse.ts"
import type { PortalRunner, PostedForm } from "./portalRoute.ts"

const text = (form: PostedForm, name: string): string => {
  const v = form.get(name)
  return typeof v === "string" ? v.replace(/\r\n?/g, "\n") : ""
}

const valuesOf = (form: PostedForm, name?: string): SkillFormValues => ({
  name: name ?? text(form, "name").trim(),
  description: text(form, "description"),
  content: text(form, "content")
})

const skillUrl = (name: string, rest = "") => `/agent-skills/${encodeURIComponent(name)}${rest}`
const blank: SkillFormValues = { name: "", description: "", content: "" }

/** A refusal about the name (exists, reserved) shown at the name field. */
const onName = (e: { readonly message: string }): Array<Problem> => [{ path: "name", message: e.message }]

const positive = (raw: string | null | undefined, path: string): Effect.Effect<number, ApiError> => {
  const n = Number(raw)
  return raw !== null && raw !== undefined && Number.isInteger(n) && n > 0
    ? Effect.succeed(n)
    : Effect.fail(badRequest([{ path, message: `"${raw ?? ""}" is not a version number` }]))
}

/** A skill's two versions as files (description, SKILL.md) for the line diff. */
const skillDiff = (name: string, from: number, to: number) =>
  Effect.gen(function* () {
    const store = yield* SkillStore
    const [a, b] = yield* Effect.all([store.version(name, from), store.version(name, to)])
    const files = (v: { description: string; content: string }) => [
      { path: "description", content: v.description },
      { path: "SKILL.md", content: v.content }
    ]
    const diff: DiffProps = { from, to, files: diffFiles(files(a), files(b)) }
    return diff
  })

/** A built-in skill has no history: its history pages send the visitor to the skill. */
const orBuiltin = <R>(request: Request, name: string, e: Effect.Effect<Response, ApiError, R>) =>
  Effect.catchIf(
    e,
    (x) => x._tag === "BuiltinReadOnly",
    () => Effect.succeed(redirect(request, skillUrl(name)))
  )

export const skillPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agent-skills",
      portal.page("read", ({ page, url }) =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.list),
          (skills) => htmlResponse(skillsPage(page, skills, noticeOf(url, "")))
        )
      )
    )
    .get(
      "/agent-skills/-/new",
      portal.page("agents.manage", ({ page }) => Effect.succeed(htmlResponse(newSkillPage(page, blank, []))))
    )
    .post(
      "/agent-skills",
      portal.action("agents.manage", ({ request, page, form, principal }) =>
        Effect.gen(function* () {
          const values = valuesOf(form)
          const refused = (problems: ReadonlyArray<Problem>) => Effect.succeed(htmlResponse(newSkillPage(page, values, problems), 400))
          return yield* (yield* SkillStore).create(values, principal.username).pipe(
            Effect.map((skill) => redirect(request, skillUrl(skill.name, "?skill-created=1"))),
            Effect.catchTags({
              SkillInvalid: (e) => refused(e.problems),
              SkillExists: (e) => refused(onName(e)),
              BuiltinReadOnly: (e) => refused(onName(e))
            })
          )
        })
      )
    )
    .get(
      "/agent-skills/:name",
      portal.page("read", ({ page, url, params }) =>
        Effect.map(
          Effect.flatMap(SkillStore, (s) => s.get(params["name"] ?? "")),
          (skill) => htmlResponse(skillPage(page, skill, skill, [], noticeOf(url, skill.name)))
        )
      )
    )
    .post(
      "/agent-skills/:name",
      portal.action("agents.manage", ({ request, page, form, principal, params }) =>
        Effect.gen(function* () {
          const store = yield* SkillStore
          const skill = yield* store.get(params["name"] ?? "")
          const values = valuesOf(form, skill.name)
          const note = form.get("changeNote")
          return yield* store
            .update(
              skill.name,
              { description: values.description, content: values.content },
              principal.username,
              typeof note === "string" ? note.slice(0, 2000) : ""
            )
            .pipe(
              Effect.flatMap((saved) => {
                const key = saved.version === skill.version ? "skill-unchanged" : "skill-saved"
                return inPlace(
                  request,
                  skillUrl(skill.name, `?${key}=1`),
                  Effect.succeed(skillBody(page, saved, saved, [], noticeText(key, "1", saved.name)))
                )
              }),
              Effect.catchTag("SkillInvalid", (e) =>
                Effect.succeed(
                  pageOrBody(
                    request,
                    () => skillPage(page, skill, values, e.problems, null),
                    () => skillBody(page, skill, values, e.problems, null),
                    400
                  )
                )
              )
            )
        })
      )
    )
    .post(
      "/agent-skills/:name/delete",
      portal.action("agents.manage", ({ request, params }) =>
        Effect.gen(function* () {
          const name = params["name"] ?? ""
          yield* (yield* SkillStore).remove(name)
          return redirect(request, `/agent-skills?deleted=${encodeURIComponent(name)}`)
        })
      )
    )
    .get(
      "/agent-skills/:name/versions",
      portal.page("read", ({ request, page, url, params }) => {
        const name = params["name"] ?? ""
        return orBuiltin(
          request,
          name,
          Effect.gen(function* () {
            const store = yield* SkillStore
            const skill = yield* store.get(name)
            const versions = yield* store.versions(name)
            return htmlResponse(skillVersionsPage(page, { skill, versions, diff: null, notice: noticeOf(url, name) }))
          })
        )
      })
    )
    .get(
      "/agent-skills/:name/versions/:version",
      portal.page("read", ({ request, page, params }) => {
        const name = params["name"] ?? ""
        return orBuiltin(
          request,
          name,
          Effect.gen(function* () {
            const store = yield* SkillStore
            const v = yield* positive(params["version"], "version")
            const skill = yield* store.get(name)
            return htmlResponse(skillVersionPage(page, skill, yield* store.version(name, v)))
          })
        )
      })
    )
    .get(
      "/agent-skills/:name/diff",
      portal.page("read", ({ request, page, url, params }) => {
        const name = params["name"] ?? ""
        return orBuiltin(
          request,
          name,
          Effect.gen(function* () {
            const from = yield* positive(url.searchParams.get("from"), "from")
            const to = yield* positive(url.searchParams.get("to"), "to")
            const diff = yield* skillDiff(name, from, to)
            if (isHtmx(request)) return htmlResponse(diffView(diff))
            const store = yield* SkillStore
            const skill = yield* store.get(name)
            return htmlResponse(skillVersionsPage(page, { skill, versions: yield* store.versions(name), diff, notice: null }))
          })
        )
      })
    )
    .post(
      "/agent-skills/:name/versions/:version/restore",
      portal.action("agents.manage", ({ request, page, params, principal }) =>
        Effect.gen(function* () {
          const v = yield* positive(params["version"], "version")
          const store = yield* SkillStore
          const skill = yield* store.restore(params["name"] ?? "", v, principal.username)
          const body = Effect.map(store.versions(skill.name), (versions) =>
            skillVersionsBody(page, { skill, versions, diff: null, notice: noticeText("skill-restored", String(v), skill.name) })
          )
          return yield* inPlace(request, skillUrl(skill.name, `/versions?skill-restored=${v}`), body)
        })
      )
    )
