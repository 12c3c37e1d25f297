/**
 * Portal security in headless Chromium: hostile agent text renders inert on every page that shows
 * it, a reader sees no edit controls and is refused when posting anyway, a form on another site
 * cannot change anything (403) nor sign the browser in to another account (login CSRF), and a
 * DNS-rebound name is refused (421).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { BROWSER_TEST_MS, MANAGER, READER, startPortal, type Portal } from "./harness.ts"
import { launchChromium } from "./launchChromium.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const EVIL_INSTRUCTIONS = `Be helpful.
</textarea><script>window.__pwned=1</script>
<div hx-get="/api/session" hx-trigger="load">loads?</div>
<img src="x" onerror="window.__pwned=2">
`
const EVIL_DESCRIPTION = `<b hx-get="/api/session" hx-trigger="load">x</b><script>window.__pwned=3</script>`

let portal: Portal

const evilPackage = (instructions: string) => ({
  files: [
    {
      path: "evil.md",
      content: `---\nname: evil\nversion: 1\ndescription: ${JSON.stringify(EVIL_DESCRIPTION)}\ntools:\n  - read\n---\n${instructions}`
    },
    { path: "skills/trap/SKILL.md", content: "</pre><script>window.__pwned=4</script>" }
  ]
})

beforeAll(async () => {
  portal = await startPortal()
  const create = Effect.flatMap(AgentStore, (s) =>
    Effect.zipRight(s.create(evilPackage(EVIL_INSTRUCTIONS), "setup"), s.save("evil", evilPackage(`${EVIL_INSTRUCTIONS}More.\n`), "setup"))
  )
  await portal.runtime.runPromise(create)
}, 120_000)

afterAll(async () => {
  await portal?.close()
})

/** Visits each path, collecting every request the page makes, and checks nothing ran. */
const visitInert = async (page: Page, paths: ReadonlyArray<string>) => {
  const requested: Array<string> = []
  page.on("request", (r) => requested.push(new URL(r.url()).pathname))
  for (const path of paths) {
    await page.goto(path)
    await page.waitForLoadState("networkidle")
    expect({ path, pwned: await page.evaluate("window.__pwned") }).toEqual({ path, pwned: undefined })
  }
  expect(requested.filter((p) => p.startsWith("/api/"))).toEqual([])
  return requested
}

describe("portal security in the browser", () => {
  test(
    "hostile instructions and descriptions render as text and run nothing (editor, views, diff, definition)",
    async () => {
      const { context, page, consoleErrors } = await portal.newPage()
      await portal.signIn(page, MANAGER)
      await visitInert(page, [
        "/agents",
        "/agents/evil",
        "/agents/evil/versions",
        "/agents/evil/versions/1",
        "/agents/evil/diff?from=1&to=2",
        "/agents/evil/definition"
      ])
      await page.goto("/agents/evil")
      await expect(page.getByLabel("Instructions (the system prompt)").inputValue()).resolves.toBe(`${EVIL_INSTRUCTIONS}More.\n`)
      await expect(page.locator(".page-header .description").textContent()).resolves.toBe(EVIL_DESCRIPTION)
      // Typing in the editor (the preview round trip echoes problem text) runs nothing either.
      await page.getByLabel("Description").fill(`${EVIL_DESCRIPTION}!`)
      await page.locator("#preview-status .status-ok").waitFor()
      expect(await page.evaluate("window.__pwned")).toBeUndefined()
      expect(consoleErrors.filter((e) => e.includes("Content Security Policy"))).toEqual([])
      await context.close()
    },
    BROWSER_TEST_MS
  )

  test(
    "a reader sees the hostile agent read-only and inert, with no edit controls anywhere",
    async () => {
      const { context, page } = await portal.newPage()
      await portal.signIn(page, READER)
      await page.goto("/agents")
      await expect(page.locator(".perms").textContent()).resolves.toContain("read only")
      expect(await page.getByRole("link", { name: "New agent" }).count()).toBe(0)
      expect(await page.getByRole("link", { name: "Import" }).count()).toBe(0)
      await visitInert(page, ["/agents/evil"])
      await expect(page.locator("pre.instructions").textContent()).resolves.toBe(`${EVIL_INSTRUCTIONS}More.\n`)
      expect(await page.locator("#agent-form, textarea").count()).toBe(0)
      for (const name of ["Disable", "Copy", "Delete", "Restore v1"]) expect(await page.getByRole("button", { name }).count()).toBe(0)
      expect(await page.locator("summary", { hasText: /Copy|Delete/ }).count()).toBe(0)
      await page.goto("/agents/evil/versions")
      expect(await page.getByRole("button", { name: /Restore/ }).count()).toBe(0)
      await page.goto("/agent-skills")
      expect(await page.getByRole("link", { name: "New shared skill" }).count()).toBe(0)
      await page.goto("/agents/-/new")
      await expect(page.locator("h1").textContent()).resolves.toBe("Not allowed")

      // Posting directly, with the session's own CSRF token from the page: the server still refuses.
      await page.goto("/agents/evil")
      const statuses = await page.evaluate(`(async () => {
      const token = JSON.parse(document.body.getAttribute("hx-headers") ?? "{}")["x-csrf-token"] ?? ""
      const post = async (path, fields) =>
        (await fetch(path, { method: "POST", body: new URLSearchParams({ _csrf: token, ...fields }), redirect: "manual" })).status
      return [
        await post("/agents/evil/delete", {}),
        await post("/agents/evil/enabled", { enabled: "false" }),
        await post("/agents/evil", { name: "evil", description: "x", instructions: "x" }),
        await post("/agents/evil/versions/1/restore", {})
      ]
    })()`)
      expect(statuses).toEqual([403, 403, 403, 403])
      const agent = await portal.runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.get("evil")))
      expect([agent.enabled, agent.version]).toEqual([true, 2])
      await context.close()
    },
    BROWSER_TEST_MS
  )

  test(
    "a form on another site posting to the portal is refused with 403",
    async () => {
      const { context, page } = await portal.newPage()
      await portal.signIn(page, MANAGER)
      const target = `${portal.baseUrl}/agents/evil/delete`
      const attacker = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: () =>
          new Response(
            `<!doctype html><form id="f" method="post" action="${target}"><input name="x" value="1"></form><script>document.getElementById("f").submit()</script>`,
            { headers: { "content-type": "text/html" } }
          )
      })
      try {
        // Same site, other origin (the session cookie goes along) and another site (it does not).
        for (const origin of [`http://127.0.0.1:${attacker.port}`, `http://localhost:${attacker.port}`]) {
          const response = page.waitForResponse((r) => r.url() === target)
          await page.goto(`${origin}/`)
          expect((await response).status()).toBe(403)
        }
      } finally {
        await attacker.stop(true)
      }
      const agent = await portal.runtime.runPromise(Effect.flatMap(AgentStore, (s) => s.get("evil")))
      expect(agent.name).toBe("evil")
      await context.close()
    },
    BROWSER_TEST_MS
  )

  test(
    "a page on another origin cannot sign the browser in to the attacker's account (login CSRF)",
    async () => {
      const { context, page } = await portal.newPage()
      const attackerCredentials = JSON.stringify({ username: READER.username, password: READER.password })
      const attacker = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: () =>
          new Response(
            `<!doctype html><form id="f" method="post" action="${portal.baseUrl}/sign-in">` +
              `<input name="username" value="${READER.username}"><input name="password" value="${READER.password}"></form>` +
              `<script>fetch(${JSON.stringify(`${portal.baseUrl}/api/session`)}, { method: "POST", mode: "no-cors", credentials: "include", ` +
              `headers: { "content-type": "text/plain" }, body: ${JSON.stringify(attackerCredentials)} }).finally(() => document.getElementById("f").submit())</script>`,
            { headers: { "content-type": "text/html" } }
          )
      })
      try {
        // 127.0.0.1 on another port: same site (the cookie would be kept), another origin.
        const api = page.waitForResponse((r) => r.url() === `${portal.baseUrl}/api/session`)
        const form = page.waitForResponse((r) => r.url() === `${portal.baseUrl}/sign-in` && r.request().method() === "POST")
        await page.goto(`http://127.0.0.1:${attacker.port}/`)
        expect([(await api).status(), (await form).status()]).toEqual([403, 403])
        expect((await context.cookies(portal.baseUrl)).map((c) => c.name)).toEqual([])
      } finally {
        await attacker.stop(true)
        await context.close()
      }
    },
    BROWSER_TEST_MS
  )

  test(
    "DNS rebinding: a name that resolves to the server (evil.example → 127.0.0.1) gets 421 on pages and sign-in",
    async () => {
      const port = new URL(portal.baseUrl).port
      const browser = await launchChromium(["--host-resolver-rules=MAP evil.example 127.0.0.1"])
      try {
        const page = await browser.newPage()
        const rebound = `http://evil.example:${port}`
        expect((await page.goto(`${rebound}/sign-in`))?.status()).toBe(421)
        const signIn = await page.evaluate(
          (body) => fetch("/api/session", { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.status),
          JSON.stringify({ username: MANAGER.username, password: MANAGER.password })
        )
        expect(signIn).toBe(421)
        expect((await page.goto(`${portal.baseUrl}/sign-in`))?.status()).toBe(200)
      } finally {
        await browser.close()
      }
    },
    BROWSER_TEST_MS
  )
})
