/**
 * A job's transcript in the portal: `GET /jobs/:id/transcript`, a page of its own, or the panel the job
 * page loads beside its timeline (htmx). Holders of transcripts.read (admins pass) see it; to anyone
 * else the panel is empty and the page is 403.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import { JobStore } from "../../worker/JobStore.ts"
import { TranscriptStore } from "../../worker/transcripts/TranscriptStore.ts"
import { noTranscriptPanel, transcriptPage, transcriptPanel } from "../../../views/pages/transcript.ts"
import { permit } from "../auth.ts"
import { htmlResponse, isHtmx } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"

/** The job page's panel asks with htmx; a boosted link or a history restore wants the whole page. */
const wantsPanel = (request: Request): boolean => isHtmx(request) && request.headers.get("hx-boosted") !== "true"

const transcript = (input: PortalInput) =>
  Effect.gen(function* () {
    const panel = wantsPanel(input.request)
    const allowed = yield* Effect.either(permit(input.request, input.principal, "transcripts.read"))
    if (allowed._tag === "Left") {
      if (panel) return htmlResponse(noTranscriptPanel())
      return yield* Effect.fail(allowed.left)
    }
    const job = yield* (yield* JobStore).get(input.params["id"] ?? "")
    const turns = yield* (yield* TranscriptStore).read(job.id)
    const props = { jobId: job.id, turns }
    return htmlResponse(panel ? transcriptPanel(props) : transcriptPage(input.page, props))
  })

export const transcriptPages = (portal: PortalRunner) => new Elysia().get("/jobs/:id/transcript", portal.page("read", transcript))
