/**
 * One version, semantic: package.json's `version` is a semver version, `job.started` reports the same
 * (`RUNTIME_VERSION`), and CHANGELOG.md has its section.
 */
import { expect, test } from "bun:test"
import { join } from "node:path"
import { RUNTIME_VERSION } from "kintsugi-runtime/kernel"
import { ROOT } from "../architecture/importGraph.ts"

const manifest: { readonly version?: unknown } = await Bun.file(join(ROOT, "package.json")).json()
const changelog = await Bun.file(join(ROOT, "CHANGELOG.md")).text()

test("package.json's version is semver, is RUNTIME_VERSION, and has its CHANGELOG.md section", () => {
  expect(manifest.version).toMatch(/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/)
  expect(RUNTIME_VERSION).toBe(String(manifest.version))
  expect(changelog).toContain(`\n## ${String(manifest.version)} - `)
})
