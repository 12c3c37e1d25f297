/**
 * `GET /api/jobs/:id/export-test`: a completed job with a transcript as the files of a self-contained
 * `bun test` folder (exportTestFolder.ts), for holders of transcripts.read (the model's turns and the
 * files the job read are in it). `kintsugi jobs export-test` writes them.
 */
import { Effect, Option } from "effect"
import { Elysia } from "elysia"
import { AgentStore } from "../../agents/AgentStore.ts"
import { builtinSkills } from "../../agents/builtins.ts"
import { SkillStore } from "../../agents/SkillStore.ts"
import { ProviderStore } from "../../providers/ProviderStore.ts"
import { JobStore } from "../../worker/JobStore.ts"
import { TranscriptStore } from "../../worker/transcripts/TranscriptStore.ts"
import type { Guard } from "../auth.ts"
import { json } from "../respond.ts"
import { param, type Handler } from "../route.ts"
import { exportFolder, JobNotExportable } from "./exportTestFolder.ts"

type Route = (
  guard: Guard,
  handler: Handler
) => (ctx: { request: Request; params: Record<string, string | undefined> }) => Promise<Response>

export const exportTestRoutes = (route: Route) =>
  new Elysia({ name: "export-test-api" }).get(
    "/api/jobs/:id/export-test",
    route("transcripts.read", (i) =>
      Effect.gen(function* () {
        const job = yield* (yield* JobStore).get(param(i, "id"))
        const refuse = (why: string) => Effect.fail(new JobNotExportable({ id: job.id, why }))
        if (job.status !== "completed")
          return yield* refuse(`it is ${job.status}: only a completed job replays to its end from its recorded turns`)
        if (job.parentJobId !== null)
          return yield* refuse(
            `it continues job ${job.parentJobId}: its conversation starts from that job's transcript, which a replay does not have`
          )
        const version = Number(job.agentVersion ?? "")
        if (!Number.isInteger(version) || version < 1) return yield* refuse("it records no agent version")
        const pkg = yield* (yield* AgentStore).exportPackage(job.agentName, version)
        const builtin = builtinSkills()
        const contents = yield* (yield* SkillStore).contents
        const sharedSkills = new Map(
          (pkg.skills ?? []).flatMap((name) => {
            const content = contents.get(name)
            return builtin.has(name) || content === undefined ? [] : [[name, content] as const]
          })
        )
        // `provider/model` as the worker recorded it; the window is the provider's as configured now.
        const [providerId = "", ...modelId] = (job.model ?? "").split("/")
        const model = yield* (yield* ProviderStore).get(providerId).pipe(
          Effect.map((p) => Option.fromNullable(p.models.find((m) => m.id === modelId.join("/")))),
          Effect.catchTag("ProviderNotFound", () => Effect.succeed(Option.none()))
        )
        const turns = yield* (yield* TranscriptStore).read(job.id)
        const events = yield* (yield* JobStore).events(job.id, -1)
        const folder = exportFolder({
          job: { id: job.id, agentName: job.agentName, agentVersion: version, task: job.task, workspace: job.workspace },
          pkg,
          model: Option.getOrUndefined(model),
          sharedSkills,
          turns: turns.map((t) => t.record),
          events
        })
        if ("why" in folder) return yield* refuse(folder.why)
        return json({ jobId: job.id, files: folder.files, notes: folder.notes })
      })
    )
  )
