/**
 * The decode floor's entry (bench/coldStart.ts): the job child's own entry (runGuardedJobChild: exit
 * guard, non-dumpable, stdin read while loading) around floor.ts instead of the kernel.
 */
import { runGuardedJobChild } from "../../src/jobChild/exit.ts"

runGuardedJobChild(() => import("./floor.ts"))
