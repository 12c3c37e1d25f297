/**
 * A job's transcript (what its model saw, turn by turn): `GET /api/jobs/:id/transcript`, opened for
 * holders of transcripts.read (admins pass). A job that kept none answers an empty list.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { JobStore } from "../../worker/JobStore.ts"
import { TranscriptStore } from "../../worker/transcripts/TranscriptStore.ts"
import type { Guard } from "../auth.ts"
import { json } from "../respond.ts"
import { param, type Handler } from "../route.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

export const transcriptRoutes = (route: Route) =>
  new Elysia({ name: "transcripts-api" }).get(
    "/api/jobs/:id/transcript",
    route("transcripts.read", (i) =>
      Effect.gen(function* () {
        const job = yield* (yield* JobStore).get(param(i, "id"))
        const turns = yield* (yield* TranscriptStore).read(job.id)
        return json({ jobId: job.id, turns: turns.map((t) => ({ ...t.record, createdAt: t.createdAt.toISOString() })) })
      })
    )
  )
