/**
 * Loads the job child's kernel (jobChild/main.ts) for `run-job` (the entry of the sources and of the
 * bytecode bundle). A cold child first starts its sandbox probe, so bubblewrap's trial run
 * overlaps the rest of the loading instead of blocking the job's checks later; the checks then wait
 * for that probe's answer (sandboxProbe.ts startProbe), never assume one. The probe's module is a leaf
 * (no Effect), so bwrap starts before anything of the kernel is evaluated. A child started ahead probes while
 * it waits for its envelope (jobChild/warmUp.ts) and starts nothing here.
 */
import { startedAhead } from "./args.ts"

export const loadJobChild = async (): Promise<typeof import("./main.ts")> => {
  // process.env: the probe starts before Effect is loaded, so the job child's start does not wait for it.
  if (!startedAhead(process.argv.slice(2))) (await import("../tools/sandboxProbe.ts")).startProbeFromEnv(process.env)
  return import("./main.ts")
}
