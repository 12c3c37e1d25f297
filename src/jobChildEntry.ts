/**
 * The job child alone (`bun src/jobChildEntry.ts` = `kintsugi run-job`): an entry that imports only
 * the kernel, so it can also be bundled to Bun bytecode for a faster start (bench/coldStart.ts).
 */
import { jobChildMain } from "./jobChild.ts"

void jobChildMain()
