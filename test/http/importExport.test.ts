/**
 * Import (files as text, as base64, a base64 ZIP) and export (a ZIP, of the current or an older
 * version), the round trip between them, and imports an attacker shaped: language-tagged front
 * matter, path traversal in ZIP names, ZIP bombs.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { strToU8, unzipSync, zipSync } from "fflate"
import { createAgent, createAgentFiles, PASSWORD, saveAgent, storeFingerprint, useApi } from "../support/api.ts"
import { createStreamingZeroZip, createZeroBomb, withDeclaredSizes } from "../agents/zipFixtures.ts"

// bun's 5 s default per test is too short for this suite on a loaded 2-core machine.
setDefaultTimeout(30_000)

const api = useApi()

// The full package grants mcp__kb__search: its server must be registered for the agent to be valid.
beforeAll(async () => {
  const r = await api.request("PUT", "/api/admin/mcp-servers/kb", { token: api.manager.token, json: { url: "https://93.184.215.14/mcp" } })
  expect(r.status).toBe(200)
})

const MiB = 1 << 20
const b64 = (bytes: Uint8Array | string) => Buffer.from(typeof bytes === "string" ? strToU8(bytes) : bytes).toString("base64")
const importBody = (json: unknown) => api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json })
const get = (path: string) => api.request("GET", path, { token: api.reader.token })
const definitionOf = async (name: string) => {
  const r = await get(`/api/admin/agents/${name}/definition`)
  expect(r.status).toBe(200)
  return r.json().definition as Record<string, unknown>
}
const zipOf = (files: ReadonlyArray<{ path: string; content: string }>) =>
  zipSync(Object.fromEntries(files.map((f) => [f.path, strToU8(f.content)])))
const unzipText = (bytes: Uint8Array): Record<string, string> =>
  Object.fromEntries(Object.entries(unzipSync(bytes)).map(([path, data]) => [path, new TextDecoder().decode(data)]))

/** A package with one of everything: local skill, command, workflow, script, shared skill, deny pattern. */
const fullPackage = (name: string) =>
  createAgentFiles(name, {
    tools: ["read", "grep", "shell", "mcp__kb__search"],
    skills: ["cite-evidence"],
    thinking: "xhigh",
    denyPatterns: ["rm\\s+-rf", "^curl\\b"],
    description: 'Quotes "and" colons: yes, and # hashes',
    instructions: "---\nA body that starts like front matter.\n\n```js\nconsole.log(1)\n```\n",
    extra: {
      "skills/triage/SKILL.md": "---\nname: triage\ndescription: How to triage.\n---\nSort by severity.\n",
      "commands/Inventory Now.md": "# Inventory\n",
      "workflows/release.md": "1. Read CHANGELOG.md\n",
      "scripts/count.sh": "#!/bin/sh\necho '```'\n"
    }
  })

/** The exported files of `from`, renamed to the package `to`. */
const renamed = (files: Record<string, string>, from: string, to: string) =>
  Object.entries(files).map(([path, content]) =>
    path === `${from}.md` ? { path: `${to}.md`, content: content.replace(`\nname: ${from}\n`, `\nname: ${to}\n`) } : { path, content }
  )

describe("POST /api/admin/agents/import", () => {
  test("files as text → 201, the agent at v1, noted as imported", async () => {
    const r = await importBody(createAgentFiles("imported-text"))
    expect(r.status).toBe(201)
    expect(r.json().agent).toMatchObject({ name: "imported-text", builtin: false, version: 1, problems: [] })
    expect((await get("/api/admin/agents/imported-text/versions")).json().versions[0].note).toBe("imported")
  })

  test("files as base64 → 201 with the same content", async () => {
    const files = fullPackage("imported-b64").files.map((f) => ({ path: f.path, contentBase64: b64(f.content) }))
    const r = await importBody({ files })
    expect(r.status).toBe(201)
    const pkg = r.json().agent.package
    expect(pkg.files).toEqual([
      { path: "commands/Inventory Now.md", content: "# Inventory\n" },
      { path: "scripts/count.sh", content: "#!/bin/sh\necho '```'\n" },
      { path: "workflows/release.md", content: "1. Read CHANGELOG.md\n" }
    ])
    expect(pkg.denyCommandPatterns).toEqual(["rm\\s+-rf", "^curl\\b"])
    expect(pkg.description).toBe('Quotes "and" colons: yes, and # hashes')
    expect(r.json().agent.package.instructions).toBe("---\nA body that starts like front matter.\n\n```js\nconsole.log(1)\n```\n")
  })

  test("a ZIP as base64 → 201; a ZIP of the package's folder is read as its contents", async () => {
    const flat = await importBody({ zip: b64(zipOf(fullPackage("imported-zip").files)) })
    expect(flat.status).toBe(201)
    expect(flat.json().agent.name).toBe("imported-zip")
    const folder = fullPackage("imported-folder").files.map((f) => ({ path: `imported-folder/${f.path}`, content: f.content }))
    const nested = await importBody({ zip: b64(zipOf(folder)) })
    expect(nested.status).toBe(201)
    expect(nested.json().agent.package.localSkills.map((s: { name: string }) => s.name)).toEqual(["triage"])
  })

  test("importing an existing custom agent saves a new version of it", async () => {
    await createAgent(api, "reimported", { instructions: "Before.\n" })
    const r = await importBody(createAgentFiles("reimported", { instructions: "After.\n" }))
    expect(r.status).toBe(201)
    expect(r.json().agent.version).toBe(2)
    expect((await definitionOf("reimported")).instructions).toBe("After.\n")
    const versions = (await get("/api/admin/agents/reimported/versions")).json().versions
    expect(versions.map((v: { version: number; note: string }) => [v.version, v.note])).toEqual([
      [2, "imported"],
      [1, "created"]
    ])
  })

  test("a built-in's name → 409, nothing saved", async () => {
    const before = await storeFingerprint(api)
    const r = await importBody(createAgentFiles("architecture-map"))
    expect(r.status).toBe(409)
    expect(r.json().error.code).toBe("builtin-read-only")
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("bodies that are not an import → 400 naming the field", async () => {
    const neither = await importBody({ files: [{ path: "x.md" }] })
    expect(neither.status).toBe(400)
    expect(neither.json().error.problems).toEqual([{ path: "files.0", message: "needs content or contentBase64" }])
    const badB64 = await importBody({ files: [{ path: "x.md", contentBase64: "not base64!" }] })
    expect(badB64.status).toBe(400)
    expect(badB64.json().error.problems).toEqual([{ path: "files.0.contentBase64", message: "is not base64" }])
    const badZip = await importBody({ zip: "%%%" })
    expect(badZip.status).toBe(400)
    expect(badZip.json().error.problems).toEqual([{ path: "zip", message: "is not base64" }])
    const notZip = await importBody({ zip: b64("just text") })
    expect(notZip.status).toBe(400)
    expect(notZip.json().error).toEqual({
      code: "import-rejected",
      message: "the import was refused",
      problems: [{ path: "(zip)", message: "not a ZIP archive (no end of central directory)" }]
    })
    expect((await importBody({ something: "else" })).status).toBe(400)
  })
})

describe("GET /api/admin/agents/:name/export", () => {
  test("a ZIP of the current version: application/zip, attachment, the agent's files; the same bytes twice", async () => {
    await createAgent(api, "exported", { instructions: "v1\n" })
    await api.request("PUT", "/api/admin/agents/exported", { token: api.manager.token, json: fullPackage("exported") })
    const r = await get("/api/admin/agents/exported/export")
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe("application/zip")
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="exported.zip"')
    const files = unzipText(r.bytes)
    const view = (await get("/api/admin/agents/exported")).json().agent
    expect(files).toEqual(Object.fromEntries(view.files.map((f: { path: string; content: string }) => [f.path, f.content])))
    expect(Object.keys(files).sort()).toEqual(
      ["exported.md", "skills/triage/SKILL.md", "commands/Inventory Now.md", "workflows/release.md", "scripts/count.sh"].sort()
    )
    expect((await get("/api/admin/agents/exported/export")).bytes).toEqual(r.bytes)
  })

  test("?version= exports an older version", async () => {
    await createAgent(api, "export-old", { instructions: "Old.\n" })
    await saveAgent(api, "export-old", { instructions: "New.\n" })
    const r = await get("/api/admin/agents/export-old/export?version=1")
    expect(r.status).toBe(200)
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="export-old-v1.zip"')
    expect(unzipText(r.bytes)["export-old.md"]).toEndWith("---\nOld.\n")
    expect(unzipText((await get("/api/admin/agents/export-old/export")).bytes)["export-old.md"]).toEndWith("---\nNew.\n")
    expect((await get("/api/admin/agents/export-old/export?version=9")).status).toBe(404)
    expect((await get("/api/admin/agents/export-old/export?version=abc")).status).toBe(400)
  })

  test("a built-in exports (its version only); an unknown agent → 404", async () => {
    const r = await get("/api/admin/agents/codebase-inventory/export")
    expect(r.status).toBe(200)
    expect(Object.keys(unzipText(r.bytes))).toContain("codebase-inventory.md")
    // Its output schema is part of the package, so of the export.
    expect(Object.keys(unzipText(r.bytes))).toContain("schemas/inventory.schema.json")
    // Its answer schema too.
    expect(Object.keys(unzipText(r.bytes))).toContain("schemas/answer.schema.json")
    expect((await get("/api/admin/agents/codebase-inventory/export?version=3")).status).toBe(200)
    expect((await get("/api/admin/agents/codebase-inventory/export?version=2")).status).toBe(404)
    expect((await get("/api/admin/agents/never-created/export")).status).toBe(404)
  })

  test("export, then import under a fresh name: the same job definition", async () => {
    await createAgent(api, "trip-source", { instructions: "v1\n" })
    await api.request("PUT", "/api/admin/agents/trip-source", { token: api.manager.token, json: fullPackage("trip-source") })
    const exported = unzipText((await get("/api/admin/agents/trip-source/export")).bytes)
    const r = await importBody({ zip: b64(zipOf(renamed(exported, "trip-source", "trip-target"))) })
    expect(r.status).toBe(201)
    const source = await definitionOf("trip-source")
    const target = await definitionOf("trip-target")
    expect(target).toEqual({ ...source, id: "trip-target", version: 1 })
    expect(source.version).toBe(2)
  })

  test("a built-in exported and imported under a fresh name resolves to the built-in's definition", async () => {
    const exported = unzipText((await get("/api/admin/agents/risk-quality/export")).bytes)
    const r = await importBody({ files: renamed(exported, "risk-quality", "my-risk-quality") })
    expect(r.status).toBe(201)
    // The built-in is the release's v2; the import is the new agent's first version.
    expect(await definitionOf("my-risk-quality")).toEqual({ ...(await definitionOf("risk-quality")), id: "my-risk-quality", version: 1 })
  })
})

describe("imports an attacker shaped", () => {
  const JS_FRONT_MATTER = (tag: string, name: string) =>
    `---${tag}\nglobalThis.__kintsugiImportRan = true; module.exports = { name: "${name}", version: 1, description: "x" }\n---\n` +
    "globalThis.__kintsugiImportRan = true\n"

  for (const tag of ["js", "javascript"]) {
    test(`---${tag} front matter → 400 with a clear problem, nothing saved, nothing evaluated`, async () => {
      const g = globalThis as { __kintsugiImportRan?: unknown }
      const name = `evil-${tag}`
      const files = [{ path: `${name}.md`, content: JS_FRONT_MATTER(tag, name) }]
      const before = await storeFingerprint(api)
      const message = expect.stringContaining(`"---${tag}" is refused`)
      for (const r of [
        await api.request("POST", "/api/admin/agents", { token: api.manager.token, json: { files } }),
        await importBody({ files }),
        await importBody({ files: files.map((f) => ({ path: f.path, contentBase64: b64(f.content) })) }),
        await importBody({ zip: b64(zipOf(files)) })
      ]) {
        expect(r.status).toBe(400)
        expect(r.json().error.problems).toEqual([{ path: `${name}.md`, message }])
      }
      const preview = await api.request("POST", "/api/admin/agents/preview", { token: api.manager.token, json: { files } })
      expect(preview.json()).toEqual({ problems: [{ path: `${name}.md`, message }], definition: null })
      expect(await storeFingerprint(api)).toBe(before)
      expect((await get(`/api/admin/agents/${name}`)).status).toBe(404)
      expect(g.__kintsugiImportRan).toBeUndefined()
    })
  }

  test("__proto__ and YAML tags in front matter are data: refused or kept as text, never a prototype or code", async () => {
    const md = (name: string, extra: string) =>
      `---\nname: ${name}\nversion: 1\ndescription: x\n${extra}\nmetadata:\n  audience: runtime\n---\nBody.\n`
    const proto = await importBody({ files: [{ path: "proto-agent.md", content: md("proto-agent", "__proto__:\n  polluted: true") }] })
    expect(proto.status).toBe(400)
    expect(proto.json().error.problems.map((p: { path: string }) => p.path)).toContain("proto-agent.md#__proto__")
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
    const tagged = await importBody({
      files: [
        {
          path: "tagged-agent.md",
          content: md("tagged-agent", "thinking: !!js/function 'function () { globalThis.__kintsugiTagRan = true }'")
        }
      ]
    })
    expect(tagged.status).toBe(400)
    expect((globalThis as { __kintsugiTagRan?: unknown }).__kintsugiTagRan).toBeUndefined()
  })

  test("ZIP entries ../../x.md and /abs.md → 400 naming both, nothing saved", async () => {
    const before = await storeFingerprint(api)
    const zip = zipSync({
      "zip-escape.md": strToU8(createAgentFiles("zip-escape").files[0]!.content),
      "../../x.md": strToU8("x"),
      "/abs.md": strToU8("x")
    })
    const r = await importBody({ zip: b64(zip) })
    expect(r.status).toBe(400)
    expect(r.json().error.code).toBe("import-rejected")
    expect(r.json().error.problems).toEqual([
      { path: "../../x.md", message: "`..` segments are not allowed" },
      { path: "/abs.md", message: "absolute paths are not allowed" }
    ])
    expect(await storeFingerprint(api)).toBe(before)
    // The same paths as plain files are refused too.
    const files = await importBody({
      files: [...createAgentFiles("zip-escape").files, { path: "../../x.md", content: "x" }, { path: "/abs.md", content: "x" }]
    })
    expect(files.status).toBe(400)
    expect(files.json().error.problems.map((p: { path: string }) => p.path)).toEqual(expect.arrayContaining(["../../x.md", "/abs.md"]))
    expect(await storeFingerprint(api)).toBe(before)
  })

  test("64 MiB of zeros in a small ZIP (fflate streaming Zip + ZipDeflate) → 400 with the size cap", async () => {
    const zip = createStreamingZeroZip(64)
    expect(zip.length).toBeLessThan(MiB)
    const r = await importBody({ zip: b64(zip) })
    expect(r.status).toBe(400)
    expect(r.json().error.code).toBe("import-rejected")
    expect(r.json().error.problems).toEqual([
      { path: "zeros.md", message: `declares ${64 * MiB} bytes, more than ${MiB}` },
      { path: "(zip)", message: `entries declare ${64 * MiB} bytes in total, more than ${8 * MiB}` }
    ])
  })

  test("the same ZIP with a lying central directory → 400 once the inflated bytes pass the cap", async () => {
    const r = await importBody({ zip: b64(withDeclaredSizes(createStreamingZeroZip(64), 1000)) })
    expect(r.status).toBe(400)
    expect(r.json().error.problems).toEqual([{ path: "zeros.md", message: `inflates to more than ${MiB} bytes` }])
  })

  test("a 1 GiB bomb declaring 100 bytes → 400, stopped at the first cap", async () => {
    const r = await importBody({ zip: b64(createZeroBomb(1024, 100)) })
    expect(r.status).toBe(400)
    expect(r.json().error.code).toBe("import-rejected")
    expect(r.json().error.problems).toHaveLength(1)
    expect(r.json().error.problems[0].message).toMatch(/^(inflates to more than|compression ratio above)/)
  })
})

describe("re-importing the same package", () => {
  test("adds no version and says so: the API answers changed: false; the portal says 'No change', never 'Imported as version'", async () => {
    const files = createAgentFiles("reimported")
    const first = await api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: files })
    expect(first.json().changed).toBe(true)
    const v = first.json().agent.version as number
    const again = await api.request("POST", "/api/admin/agents/import", { token: api.manager.token, json: files })
    expect(again.json()).toMatchObject({ changed: false, agent: { version: v } })

    const session = await api.signIn(api.manager.username, PASSWORD)
    const upload = (name: string, content: string) => {
      const form = new FormData()
      form.append("files", new File([content], name, { type: "text/markdown" }))
      return form
    }
    const main = files.files[0]!
    const same = await api.request("POST", "/agents/-/import", { session, form: upload(main.path, main.content) })
    expect(same.status).toBe(303)
    const location = same.headers.get("location") ?? ""
    expect(location).toBe(`/agents/reimported?import-unchanged=${v}`)
    const page = await api.request("GET", location, { session })
    expect(page.text).toContain(`No change: version ${v} is already this package`)
    expect(page.text).not.toContain("Imported as version")

    // A changed upload is a new version, and says so.
    const changed = await api.request("POST", "/agents/-/import", {
      session,
      form: upload(main.path, main.content.replace("Read WORKSPACE.md first.", "Read README.md first."))
    })
    expect(changed.headers.get("location")).toBe(`/agents/reimported?imported=${v + 1}`)

    // A Claude Code file (adapted, so the result lists notes first): the same answer on the htmx fragment.
    const claude = "---\nname: claude-again\ndescription: Reviews.\ntools: Read, Grep\nmodel: opus\n---\nReview.\n"
    const created = await api.request("POST", "/agents/-/import", {
      session,
      form: upload("claude-again.md", claude),
      headers: { "hx-request": "true" }
    })
    expect(created.text).toContain("Agent imported.")
    const w = Number(/claude-again\?imported=(\d+)/.exec(created.text)?.[1])
    const fragment = await api.request("POST", "/agents/-/import", {
      session,
      form: upload("claude-again.md", claude),
      headers: { "hx-request": "true" }
    })
    expect(fragment.status).toBe(200)
    expect(fragment.text).toContain(`No change: version ${w} is already this package.`)
    expect(fragment.text).toContain(`/agents/claude-again?import-unchanged=${w}`)
  })
})
