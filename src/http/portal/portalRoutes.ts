/**
 * The Agent Builder portal as one Elysia plugin: static files, sign-in, agents, versions, shared
 * skills, and an HTML 404 for any other page. Mounted by makeApp beside the JSON API.
 */
import { Elysia } from "elysia"
import type { SignInThrottle } from "../../access/SignInThrottle.ts"
import type { AppRuntime } from "../route.ts"
import { accountPages } from "./accountPages.ts"
import { agentPage } from "./agentPage.ts"
import { agentPages } from "./agentPages.ts"
import { bindingPages } from "./bindingPages.ts"
import { evalPages } from "./evalPages.ts"
import { jobPages } from "./jobPages.ts"
import { mcpPages } from "./mcpPages.ts"
import { projectPages } from "./projectPages.ts"
import { memoryPages } from "./memoryPages.ts"
import { providerPages } from "./providerPages.ts"
import { loadAssets, staticResponse } from "./assets.ts"
import { errorHtml, portalRunner } from "./portalRoute.ts"
import { sessionPages } from "./sessionPages.ts"
import { skillPages } from "./skillPages.ts"
import { transcriptPages } from "./transcriptPages.ts"
import { userPages } from "./userPages.ts"
import { versionPages } from "./versionPages.ts"
import { webPages } from "./webPages.ts"
import { workspacePages } from "./workspacePages.ts"

export interface PortalOptions {
  readonly runtime: AppRuntime
  /** Receives defects (never shown to the client). */
  readonly log: (line: string) => void
  readonly signInThrottle: SignInThrottle["Type"]
  /** How often a silent job's event stream sends a comment (default SSE_HEARTBEAT_MS). */
  readonly heartbeatMs?: number
}

export const portalRoutes = (options: PortalOptions) => {
  const assets = loadAssets()
  const portal = portalRunner(options.runtime, options.log, assets.urls)
  const notFound = (request: Request) =>
    errorHtml(request, portal.anonymous(new URL(request.url).pathname), {
      status: 404,
      title: "Not found",
      message: "There is no page at this address.",
      problems: [],
      agents: [],
      signIn: false
    })
  const statics = assets.files.reduce((app, file) => app.get(file.path, () => staticResponse(file)), new Elysia())
  return (
    new Elysia({ name: "agent-builder-portal" })
      .use(statics)
      .use(sessionPages(portal, options.signInThrottle))
      .use(agentPages(portal))
      .use(versionPages(portal))
      .use(evalPages(portal))
      .use(agentPage(portal))
      .use(skillPages(portal))
      .use(providerPages(portal))
      .use(bindingPages(portal))
      .use(mcpPages(portal))
      .use(webPages(portal))
      .use(jobPages(portal, options.heartbeatMs))
      .use(transcriptPages(portal))
      .use(projectPages(portal))
      .use(accountPages(portal, options.signInThrottle))
      .use(userPages(portal))
      .use(memoryPages(portal))
      .use(workspacePages(portal))
      // Any other address: an HTML 404 (a `/*` route would shadow the API's own `/api/*` JSON 404).
      .onError({ as: "global" }, ({ code, request }) =>
        code === "NOT_FOUND" && !new URL(request.url).pathname.startsWith("/api/") ? notFound(request) : undefined
      )
  )
}
