/**
 * The job child alone (`bun src/jobChild/entry.ts` = `kintsugi run-job`): an entry that imports only
 * the kernel, and is what the Bun bytecode bundle of the job child is built from (jobChildBundle.ts).
 * The exit guard is armed before the kernel loads, so even a kernel that cannot load ends the job.
 */
import { runGuardedJobChild } from "./exit.ts"

runGuardedJobChild(() => import("./load.ts").then((m) => m.loadJobChild()))
