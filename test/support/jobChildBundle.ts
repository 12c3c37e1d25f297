/**
 * Which job child the tests spawn: `src/cli.ts run-job` from the sources, or — with
 * KINTSUGI_TEST_JOB_CHILD=bundle — the Bun bytecode bundle the worker runs (src/worker/child/jobChildBundle.ts),
 * built once per source key into a cache under the system temp dir by the test preload (setup.ts).
 * `KINTSUGI_TEST_JOB_CHILD=bundle bun test test/kernel test/security` runs those suites against it.
 */
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureBundle, sourceKey } from "../../src/worker/child/jobChildBundle.ts"

export const TEST_JOB_CHILD_VAR = "KINTSUGI_TEST_JOB_CHILD"
const ENTRY_VAR = "KINTSUGI_TEST_JOB_CHILD_ENTRY"
const CLI = join(import.meta.dir, "..", "..", "src", "cli.ts")
export const TEST_BUNDLE_CACHE = join(tmpdir(), "kintsugi-test-job-child")

/** Builds (or finds) the bundle when the run asks for it; called once by the preload. */
export const prepareTestJobChild = async (): Promise<void> => {
  const mode = process.env[TEST_JOB_CHILD_VAR]
  if (mode === undefined || mode === "" || mode === "source") return
  if (mode !== "bundle") throw new Error(`${TEST_JOB_CHILD_VAR} must be "bundle" or "source", not ${JSON.stringify(mode)}`)
  process.env[ENTRY_VAR] = await ensureBundle(TEST_BUNDLE_CACHE, sourceKey())
  process.stderr.write(`job child under test: the bytecode bundle ${process.env[ENTRY_VAR]}\n`)
}

/** The entry the tests' job child runs (`bun <entry> run-job`). */
export const jobChildEntryForTests = (): string => process.env[ENTRY_VAR] ?? CLI
