/**
 * Preloaded by bun test (bunfig.toml): keeps loopback out of any HTTP proxy, and makes the sandbox
 * mode of every job child explicit (bubblewrap when it works here, else off) unless the run sets one.
 * Without bubblewrap, a test run as root (a plain container) may run jobs unconfined.
 * KINTSUGI_TEST_JOB_CHILD=bundle makes the spawned job child the bytecode bundle (jobChildBundle.ts).
 * A plain `bun test` runs again as `bun test --parallel` (parallelRun.ts): bunfig.toml has no key for it.
 */
import { prepareTestJobChild } from "./jobChildBundle.ts"
import { runInParallel } from "./parallelRun.ts"
import { bwrapWorks, TEST_SANDBOX_MODE } from "./sandbox.ts"

process.env["NO_PROXY"] = ["127.0.0.1", "localhost", process.env["NO_PROXY"]].filter(Boolean).join(",")
process.env["KINTSUGI_SANDBOX"] ??= TEST_SANDBOX_MODE
if (!bwrapWorks && process.getuid?.() === 0) process.env["KINTSUGI_ALLOW_UNCONFINED_ROOT"] ??= "1"
// KINTSUGI_TEST_JOB_CHILD=bundle: the job child under test is the bytecode bundle (jobChildBundle.ts).
await prepareTestJobChild()
await runInParallel()
