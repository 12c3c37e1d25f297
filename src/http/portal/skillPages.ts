/** Shared skills through SkillStore: list, view, create, edit, delete (refused, naming the agents, while in use). */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { SkillStore } from "../../agents/SkillStore.ts"
import type { Problem } from "../../contract/Problem.ts"
import { newSkillPage, skillPage, skillsPage, type SkillFormValues } from "../../../views/pages/skills.ts"
import { htmlResponse, noticeOf, redirect } from "./pageResponse.ts"
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

export const skillPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/agent-skills",
      portal.page("read", ({ page, url }) => Effect.map(Effect.flatMap(SkillStore, (s) => s.list), (skills) => htmlResponse(skillsPage(page, skills, noticeOf(url, "")))))
    )
    .get("/agent-skills/-/new", portal.page("agents.manage", ({ page }) => Effect.succeed(htmlResponse(newSkillPage(page, blank, [])))))
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
        Effect.map(Effect.flatMap(SkillStore, (s) => s.get(params["name"] ?? "")), (skill) =>
          htmlResponse(skillPage(page, skill, skill, [], noticeOf(url, skill.name)))
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
          return yield* store.update(skill.name, { description: values.description, content: values.content }, principal.username).pipe(
            Effect.map(() => redirect(request, skillUrl(skill.name, "?skill-saved=1"))),
            Effect.catchTag("SkillInvalid", (e) => Effect.succeed(htmlResponse(skillPage(page, skill, values, e.problems, null), 400)))
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
