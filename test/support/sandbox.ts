/**
 * The sandbox mode tests run with: bubblewrap when it works on this machine, else unconfined (`off`).
 * Tests that need bubblewrap skip with `BWRAP_SKIP_REASON` when it does not work.
 */
import { probeBwrap, probeLandlock, type SandboxConfig } from "../../src/tools/Sandbox.ts"

const probe = probeBwrap()
/** Whether bubblewrap works here (the same probe the kernel runs). */
export const bwrapWorks = probe._tag === "Bwrap"
/** Printed by tests that skip because bubblewrap does not work here. */
export const BWRAP_SKIP_REASON = probe._tag === "Unavailable" ? `skipped: ${probe.reason}` : ""
/** Whether Landlock confines a command here (probed on first use: a spawn of Bun). */
export const landlockWorks = (): boolean => probeLandlock()._tag === "Landlock"
/** Printed by tests that skip because Landlock does not work here. */
export const landlockSkipReason = (): string => {
  const status = probeLandlock()
  return status._tag === "Unavailable" ? `skipped: ${status.reason}` : ""
}
/** The mode every test job runs with unless a test chooses one. */
export const TEST_SANDBOX_MODE = bwrapWorks ? "bwrap" : "off"
/** For in-process kernels: the default mode, and unconfined root allowed when there is no sandbox. */
export const testSandboxConfig = (): SandboxConfig => (bwrapWorks ? { mode: "bwrap" } : { mode: "off", unconfinedRoot: "allow" })

if (!bwrapWorks) console.warn(`bubblewrap tests ${BWRAP_SKIP_REASON}`)
