/**
 * Projects → a project → Memory in the portal (/projects/:id/memory): the page, a person's
 * review (approve, reject, edit before approving), settings and reset. The same checks and guards as
 * the memory API: reading needs a session, every change agents.manage (and a CSRF token).
 */
import { Effect, Either } from "effect"
import { Elysia } from "elysia"
import { memoryHref, projectMemoryPage, type QueuedNote } from "../../../views/pages/projectMemory.ts"
import { decodeAll } from "../../contract/Problem.ts"
import { MemoryStore } from "../../worker/memory/MemoryStore.ts"
import { logDay, MemorySettingsInput, noteFilter, projectOf, ReviewInput } from "../api/memory.ts"
import { badRequest, NotFound } from "../respond.ts"
import { htmlResponse, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

const NOTICES: Readonly<Record<string, string>> = {
  reviewed: "The note was approved.",
  rejected: "The note was rejected.",
  settings: "Memory settings saved.",
  reset: "The project's memory was reset."
}

const field = (input: PortalInput, name: string): string | undefined => {
  const v = input.form.get(name)
  return typeof v === "string" && v !== "" ? v : undefined
}
const days = (input: PortalInput, name: string): number | undefined => {
  const v = field(input, name)
  return v === undefined ? undefined : Number(v)
}

export const memoryPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/projects/:id/memory",
      portal.page("read", (input) =>
        Effect.gen(function* () {
          const project = yield* projectOf(input.params["id"] ?? "")
          const store = yield* MemoryStore
          const filter = yield* noteFilter(input.url)
          const date = yield* logDay(input.url)
          const learned = yield* store.list(project.id, { trust: "learned" })
          const queue: Array<QueuedNote> = []
          for (const note of learned.slice(0, 50)) {
            // The note was just listed for this project: a missing note or a store failure here is a defect of the page.
            const { revisions } = yield* Effect.orDie(store.get(project.id, note.id))
            queue.push({ note, previous: revisions.length > 1 ? (revisions[revisions.length - 2] ?? null) : null })
          }
          const done = input.url.searchParams.get("done") ?? ""
          return htmlResponse(
            projectMemoryPage(input.page, {
              projectId: project.id,
              projectName: project.name,
              settings: yield* store.settings(project.id),
              queue,
              notes: yield* store.list(project.id, filter),
              filter: { trust: filter.trust ?? "", kind: filter.kind ?? "", q: filter.q ?? "" },
              date,
              log: yield* store.dailyLog(project.id, date),
              notice: Object.hasOwn(NOTICES, done) ? (NOTICES[done] ?? null) : null
            })
          )
        })
      )
    )
    .post(
      "/projects/:id/memory/notes/:noteId/review",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const project = yield* projectOf(input.params["id"] ?? "")
          const decoded = decodeAll(ReviewInput)({
            decision: field(input, "decision") ?? "",
            ...(field(input, "note") === undefined ? {} : { note: field(input, "note") }),
            ...(field(input, "title") === undefined ? {} : { title: field(input, "title") }),
            ...(field(input, "body") === undefined ? {} : { body: (field(input, "body") ?? "").replace(/\r\n/g, "\n") })
          })
          if (Either.isLeft(decoded)) return yield* Effect.fail(badRequest(decoded.left))
          const r = decoded.right
          yield* (yield* MemoryStore)
            .review(project.id, input.params["noteId"] ?? "", r.decision, input.principal.username, {
              note: r.note,
              title: r.title,
              body: r.body
            })
            .pipe(
              Effect.catchTags({
                NoteNotFound: (e) => Effect.fail(new NotFound({ message: e.message })),
                ReviewRefused: (e) => Effect.fail(badRequest([{ path: "decision", message: e.message }]))
              })
            )
          return redirect(input.request, memoryHref(project.id, `?done=${r.decision}`))
        })
      )
    )
    .post(
      "/projects/:id/memory/settings",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const project = yield* projectOf(input.params["id"] ?? "")
          const retention = Object.fromEntries(
            (["learnedDays", "forgottenDays", "scratchpadDays", "logDays"] as const).flatMap((k) =>
              days(input, k) === undefined ? [] : [[k, days(input, k)]]
            )
          )
          const decoded = decodeAll(MemorySettingsInput)({ enabled: field(input, "enabled") === "on", retention })
          if (Either.isLeft(decoded)) return yield* Effect.fail(badRequest(decoded.left))
          const store = yield* MemoryStore
          const current = yield* store.settings(project.id)
          yield* store.putSettings(
            project.id,
            decoded.right.enabled,
            { ...current.retention, ...decoded.right.retention },
            input.principal.username
          )
          return redirect(input.request, memoryHref(project.id, "?done=settings"))
        })
      )
    )
    .post(
      "/projects/:id/memory/reset",
      portal.action("agents.manage", (input) =>
        Effect.gen(function* () {
          const project = yield* projectOf(input.params["id"] ?? "")
          if (field(input, "confirm") !== project.id)
            return yield* Effect.fail(badRequest([{ path: "confirm", message: `type the project id "${project.id}" to confirm` }]))
          yield* (yield* MemoryStore).reset(project.id, input.principal.username)
          return redirect(input.request, memoryHref(project.id, "?done=reset"))
        })
      )
    )
