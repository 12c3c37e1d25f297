/**
 * Every editing form of the portal (a POST form laid out as a card: agents, skills, projects, bindings,
 * providers, MCP servers, tokens, web search, run) carries the unsaved-changes guard
 * (`data-unsaved-guard`, views/static/forms.js); the browser side of the guard is tested in Chromium
 * (adminJourney, guardJourney). A new editing form without it fails here.
 */
import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

const PAGES = join(import.meta.dir, "..", "..", "views", "pages")

/** Each `<form …>` opening tag of a view's source, with its file. */
const formTags = (): Array<{ readonly file: string; readonly tag: string }> =>
  readdirSync(PAGES)
    .filter((f) => f.endsWith(".ts"))
    .flatMap((file) => [...readFileSync(join(PAGES, file), "utf8").matchAll(/<form\b[^>]*>/g)].map((m) => ({ file, tag: m[0] })))

describe("unsaved-changes guard coverage", () => {
  test("every POST form laid out as a card is guarded", () => {
    const editing = formTags().filter(({ tag }) => /method="post"/.test(tag) && /class="[^"]*\bstack card\b/.test(tag))
    expect(editing.length).toBeGreaterThanOrEqual(10)
    expect(editing.filter(({ tag }) => !tag.includes("data-unsaved-guard")).map(({ file, tag }) => `${file}: ${tag}`)).toEqual([])
  })
})
