/**
 * Who reads which table: `admin.agent_binding` only through the Bindings service (one
 * `Binding` type), `runtime.project` only through Projects; no SQL in route files; and no environment
 * reads outside the secrets re-exec (everything else reads Config).
 */
import { describe, expect, test } from "bun:test"
import { Glob } from "bun"
import path from "node:path"

const ROOT = path.join(import.meta.dir, "..", "..")
const sources = async (dirs: ReadonlyArray<string>) => {
  const files: Array<{ file: string; text: string }> = []
  for (const dir of dirs) {
    for await (const file of new Glob("**/*.ts").scan({ cwd: path.join(ROOT, dir) })) {
      files.push({ file: `${dir}/${file}`, text: await Bun.file(path.join(ROOT, dir, file)).text() })
    }
  }
  return files
}
const files = await sources(["src", "views"])
const mentioning = (pattern: RegExp) =>
  files
    .filter((f) => pattern.test(f.text))
    .map((f) => f.file)
    .sort()

describe("table owners", () => {
  test("admin.agent_binding is read and written by the Bindings service (and ProviderStore's in-use check)", () => {
    expect(files.length).toBeGreaterThan(100)
    // ProviderStore cannot call Bindings (Bindings checks models against ProviderStore): its delete keeps one read, in its transaction.
    // DbWrites names the table only to map a write to the caches it empties; it runs no statement on it.
    expect(mentioning(/admin\.agent_binding/)).toEqual([
      "src/db/DbWrites.ts",
      "src/providers/Bindings.ts",
      "src/providers/ProviderStore.ts"
    ])
  })

  test("there is one Binding type", () => {
    expect(mentioning(/^(export )?(interface|type|class) Binding\b/m)).toEqual(["src/providers/Bindings.ts"])
  })

  test("runtime.project is only in Projects; route files (src/http/api, src/http/portal) hold no SQL", () => {
    const routeFile = (f: string) => f.startsWith("src/http/api/") || f.startsWith("src/http/portal/")
    expect(mentioning(/runtime\.project\b/).filter((f) => f.startsWith("src/http/"))).toEqual([])
    expect(files.filter((f) => routeFile(f.file) && /\bsql`/.test(f.text)).map((f) => f.file)).toEqual([])
  })

  test("process.env is read only by the secrets re-exec (and the test-only scripted servers); the rest reads Config", () => {
    const readers = files.filter((f) => /process\.env\b/.test(f.text.replace(/\/\/.*|\/\*[\s\S]*?\*\//g, ""))).map((f) => f.file)
    // Narrow exceptions, each a plain function called outside any Effect runtime: the data-dir template's
    // cache location (also read by the Docker build's one-line template step), and a cold job child's sandbox
    // probe, started before Effect is loaded (jobChild/load.ts: KINTSUGI_SANDBOX read by sandboxConfigFromEnv,
    // the function the kernel's Config path uses, and the worker's KINTSUGI_SANDBOX_PROBED). And the command's
    // entry, which pins KINTSUGI_DATA_DIR to an absolute path before anything reads it (src/cli/installation.ts).
    // And the CLI's colour switch (src/cli/terminal.ts: NO_COLOR), read before any runtime exists. Anything new here fails.
    expect(readers.filter((f) => (f.startsWith("src/") && !f.startsWith("src/testing/")) || f.startsWith("views/")).sort()).toEqual([
      "src/cli.ts",
      "src/cli/processSecrets.ts",
      "src/cli/terminal.ts",
      "src/db/dataDirTemplate.ts",
      "src/jobChild/load.ts"
    ])
  })
})
