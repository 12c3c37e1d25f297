/**
 * Accessibility of every portal page, in headless Chromium: axe-core (a pinned dev dependency, run in
 * the page) checks labels, contrast, names, landmarks and focusability against WCAG 2.1/2.2 A and AA;
 * every page fits 390 px without sideways scrolling; the keyboard focus ring on the dark top bar has at
 * least 3:1 contrast (WCAG 1.4.11). The page list comes from the app's own routes, so a new page is
 * checked without touching this file (a path parameter this file cannot fill makes the test fail).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import { SkillStore } from "../../src/agents/SkillStore.ts"
import { McpServers } from "../../src/providers/McpServers.ts"
import { ProviderStore } from "../../src/providers/ProviderStore.ts"
import { JobStore } from "../../src/worker/JobStore.ts"
import { Projects } from "../../src/worker/Projects.ts"
import { MANAGER, runAxe, startPortal, type Portal } from "./harness.ts"

setDefaultTimeout(300_000)

let portal: Portal
let context: BrowserContext
let page: Page
let jobId = ""

type Services = AgentStore | SkillStore | ProviderStore | McpServers | JobStore | Projects
const run = <A, E>(effect: Effect.Effect<A, E, Services>) => portal.runtime.runPromise(effect as Effect.Effect<A, E, never>)

const agentFile = {
  files: [
    {
      path: "a11y-agent.md",
      content: "---\nname: a11y-agent\nversion: 1\ndescription: Checked for accessibility.\ntools:\n  - read\n---\nRead.\n"
    }
  ]
}

beforeAll(async () => {
  portal = await startPortal()
  await run(Effect.flatMap(AgentStore, (s) => s.create(agentFile, "setup")))
  await run(Effect.flatMap(SkillStore, (s) => s.create({ name: "a11y-skill", content: "Be clear.\n" }, "setup")))
  await run(Effect.flatMap(SkillStore, (s) => s.update("a11y-skill", { content: "Be clearer.\n" }, "setup", "Clearer.")))
  await run(
    Effect.flatMap(ProviderStore, (s) =>
      s.create(
        {
          kind: "custom",
          id: "a11y-gw",
          api: "openai-completions",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-a11y",
          models: [{ id: "m1", contextWindow: 8000, maxTokens: 1000, thinkingLevels: ["off"] }]
        },
        "setup"
      )
    )
  )
  await run(
    Effect.flatMap(McpServers, (m) =>
      m.put("a11y-mcp", { url: "http://127.0.0.1:9/mcp", timeoutSec: 30, allowPrivateNetwork: true }, "setup")
    )
  )
  await run(Effect.flatMap(Projects, (p) => p.create({ id: "a11y-project", name: "Accessible project" })))
  const job = await run(
    Effect.flatMap(JobStore, (s) =>
      s.enqueue(
        { agent: "a11y-agent", task: "Look.", workspace: { root: "/tmp", readOnly: ["/tmp"], outDir: "/tmp" }, limits: { timeoutSec: 60 } },
        "setup"
      )
    )
  )
  jobId = job.id
  // Our own context: axe is injected with page.evaluate, which the page's CSP must not block.
  context = await portal.browser.newContext({ baseURL: portal.baseUrl, viewport: { width: 1280, height: 900 }, bypassCSP: true })
  page = await context.newPage()
  await portal.signIn(page, MANAGER)
}, 180_000)

afterAll(async () => {
  await context?.close()
  await portal?.close()
})

/** A value for each path parameter, by the route's first segment. */
const fill = (path: string): string | undefined => {
  const first = path.split("/")[1] ?? ""
  const values: Record<string, Record<string, string>> = {
    agents: { name: "a11y-agent", version: "1" },
    "agent-skills": { name: "a11y-skill", version: "1" },
    providers: { id: "a11y-gw" },
    "mcp-servers": { name: "a11y-mcp" },
    jobs: { id: jobId },
    projects: { id: "a11y-project" },
    users: { name: MANAGER.username }
  }
  let missing = false
  const filled = path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const v = values[first]?.[name]
    if (v === undefined) missing = true
    return v ?? ""
  })
  return missing ? undefined : filled
}

/** Query strings some pages need to render fully. */
const QUERIES: Readonly<Record<string, string>> = {
  "/agents/:name/diff": "?from=1&to=1",
  "/agent-skills/:name/diff": "?from=1&to=2"
}

/** GET routes that are not pages: files, downloads, fragments, streams. */
const NOT_PAGES = [
  /^\/static\//,
  /^\/vendor\//,
  /\/export$/,
  /^\/bindings\/-\/thinking$/,
  /\/events$/,
  /\/stream$/,
  /\/output$/,
  /^\/jobs\/rows$/,
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/metrics$/,
  /^\/sign-out$/
]

const pagePaths = (): { readonly pages: Array<string>; readonly unfilled: Array<string> } => {
  const routes = portal.app.routes.filter(
    (r) => r.method === "GET" && !r.path.startsWith("/api/") && !NOT_PAGES.some((re) => re.test(r.path))
  )
  const pages: Array<string> = []
  const unfilled: Array<string> = []
  for (const r of routes) {
    const filled = fill(r.path)
    if (filled === undefined) unfilled.push(r.path)
    else pages.push(`${filled}${QUERIES[r.path] ?? ""}`)
  }
  return { pages: [...new Set(pages)], unfilled }
}

const axe = () => runAxe(page)

describe("every portal page", () => {
  test("every GET page route of the app is covered", () => {
    const { pages, unfilled } = pagePaths()
    expect(unfilled).toEqual([])
    expect(pages.length).toBeGreaterThan(20)
  })

  test("axe-core finds no WCAG A/AA violation (labels, contrast, names, focus) on any page", async () => {
    const found: Record<string, ReadonlyArray<string>> = {}
    for (const path of pagePaths().pages) {
      await page.setViewportSize({ width: 1280, height: 900 })
      const response = await page.goto(path)
      expect(response?.headers()["content-type"] ?? "").toStartWith("text/html")
      const violations = await axe()
      if (violations.length > 0)
        found[path] = violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)
    }
    expect(found).toEqual({})
  })

  test("at 390 px no page scrolls sideways", async () => {
    const widest: Record<string, string> = {}
    const wide: Record<string, number> = {}
    await page.setViewportSize({ width: 390, height: 844 })
    for (const path of pagePaths().pages) {
      await page.goto(path)
      const width = Number(await page.evaluate("document.documentElement.scrollWidth"))
      if (width > 390) {
        wide[path] = width
        // What sticks out, to fix it: the widest elements past the right edge.
        widest[path] = String(
          await page.evaluate(
            `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 391).slice(-3).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join("; ")`
          )
        )
      }
    }
    await portal.screenshot(page, "home-390", false)
    expect({ wide, widest }).toEqual({ wide: {}, widest: {} })
  })

  test("the focus ring on the dark top bar has at least 3:1 contrast against the bar", async () => {
    await page.setViewportSize({ width: 1280, height: 900 })
    await page.goto("/home")
    const ratios: Array<{ readonly text: string; readonly ratio: number }> = []
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab")
      const info = (await page.evaluate(`(() => {
        const el = document.activeElement
        if (!el || !el.closest(".topbar")) return null
        const parse = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number)
        const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4) }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b) }
        const style = getComputedStyle(el)
        const ring = parse(style.outlineColor)
        const bar = parse(getComputedStyle(el.closest(".topbar")).backgroundColor)
        const [a, b] = [lum(ring), lum(bar)].sort((x, y) => y - x)
        return { text: (el.textContent || "").trim(), ratio: (a + 0.05) / (b + 0.05), width: parseFloat(style.outlineWidth) }
      })()`)) as { text: string; ratio: number; width: number } | null
      if (info !== null) {
        expect(info.width).toBeGreaterThanOrEqual(2)
        ratios.push({ text: info.text, ratio: info.ratio })
      }
    }
    expect(ratios.length).toBeGreaterThan(3)
    for (const r of ratios) expect(r.ratio).toBeGreaterThanOrEqual(3)
  })
})
