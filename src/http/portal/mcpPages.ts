/**
 * MCP servers in the portal: list, add, edit, delete through McpServers (which decodes, runs the URL
 * policy and seals the headers). A refused save shows the problems at their fields.
 */
import { Effect } from "effect"
import { Elysia } from "elysia"
import type { Problem } from "../../contract/Problem.ts"
import { mcpHref } from "../../../views/components.ts"
import { McpServers } from "../../providers/McpServers.ts"
import { mcpServerPage, mcpServersPage, mcpToolsFragment, mcpToolsPage, type McpToolListing } from "../../../views/pages/mcpServers.ts"
import { blankMcpForm, mcpFormFrom, mcpFormOf, mcpInput, placeByRow, type McpForm } from "../../../views/forms/providerForm.ts"
import { htmlResponse, isHtmx, noticeOf, redirect } from "./pageResponse.ts"
import type { PortalInput, PortalRunner } from "./portalRoute.ts"
import { badRequest } from "../respond.ts"

const FIELDS = ["name", "url", "timeoutSec", "allowedTools", "headers"]
const nameParam = (i: PortalInput) => i.params["name"] ?? ""

const save = (input: PortalInput, form: McpForm, creating: boolean) =>
  Effect.gen(function* () {
    const refused = (problems: ReadonlyArray<Problem>) =>
      htmlResponse(mcpServerPage(input.page, form, placeByRow(problems, [], FIELDS), creating), 400)
    if (creating && !/^[a-z][a-z0-9-]{0,63}$/.test(form.name))
      return refused([{ path: "name", message: "must match [a-z][a-z0-9-]* (at most 64 characters)" }])
    const servers = yield* McpServers
    if (creating && (yield* Effect.either(servers.get(form.name)))._tag === "Right")
      return refused([{ path: "name", message: `an MCP server "${form.name}" already exists` }])
    return yield* servers.put(form.name, mcpInput(form, input.form), input.principal.username).pipe(
      Effect.map((s) => redirect(input.request, `/mcp-servers?${creating ? "added" : "updated"}=${encodeURIComponent(s.name)}`)),
      Effect.catchTag("McpServerInvalid", (e) => Effect.succeed(refused(e.problems)))
    )
  })

/** Lists the server's tools live; a server that cannot be listed is shown as the error, plainly. */
const tools = (input: PortalInput) =>
  Effect.gen(function* () {
    const servers = yield* McpServers
    const server = yield* servers.get(nameParam(input))
    const listing: McpToolListing = yield* servers.listTools(server.name).pipe(
      Effect.map((list) => ({ tools: list })),
      Effect.catchTag("McpUnreachable", (e) => Effect.succeed({ error: e.message }))
    )
    return htmlResponse(
      isHtmx(input.request)
        ? mcpToolsFragment(input.page, server, listing)
        : mcpToolsPage(input.page, server, listing, noticeOf(input.url, server.name))
    )
  })

const allowTool = (input: PortalInput) =>
  Effect.gen(function* () {
    const name = nameParam(input)
    const tool = String(input.form.get("tool") ?? "")
    const allowed = input.form.get("allowed") === "1"
    yield* (yield* McpServers)
      .allowTool(name, tool, allowed, input.principal.username)
      .pipe(Effect.catchTag("McpServerInvalid", (e) => Effect.fail(badRequest(e.problems, "the tool name has problems"))))
    // Stays on the page: htmx gets the tools list again as its fragment; a plain post is redirected there.
    if (isHtmx(input.request)) return yield* tools(input)
    return redirect(input.request, `${mcpHref(name, "/tools")}?updated=${encodeURIComponent(tool.slice(0, 100))}`)
  })

export const mcpPages = (portal: PortalRunner) =>
  new Elysia()
    .get(
      "/mcp-servers",
      portal.page("read", ({ page, url }) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.list),
          (list) => htmlResponse(mcpServersPage(page, list, noticeOf(url, "")))
        )
      )
    )
    .get(
      "/mcp-servers/-/new",
      portal.page("providers.manage", ({ page }) => Effect.succeed(htmlResponse(mcpServerPage(page, blankMcpForm(), new Map(), true))))
    )
    .post(
      "/mcp-servers",
      portal.action("providers.manage", (input) => save(input, mcpFormFrom(input.form), true))
    )
    .get(
      "/mcp-servers/:name",
      portal.page("read", (input) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.get(nameParam(input))),
          (s) => htmlResponse(mcpServerPage(input.page, mcpFormOf(s), new Map(), false))
        )
      )
    )
    .post(
      "/mcp-servers/:name",
      portal.action("providers.manage", (input) =>
        Effect.flatMap(
          Effect.flatMap(McpServers, (m) => m.get(nameParam(input))),
          (s) => save(input, mcpFormFrom(input.form, s.name), false)
        )
      )
    )
    .get("/mcp-servers/:name/tools", portal.page("providers.manage", tools))
    .post("/mcp-servers/:name/allowed-tools", portal.action("providers.manage", allowTool))
    .post(
      "/mcp-servers/:name/delete",
      portal.action("providers.manage", (input) =>
        Effect.map(
          Effect.flatMap(McpServers, (m) => m.remove(nameParam(input))),
          () => redirect(input.request, `/mcp-servers?removed=${encodeURIComponent(nameParam(input))}`)
        )
      )
    )
