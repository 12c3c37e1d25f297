/**
 * The resources one job's process tools may take (ARCHITECTURE §10, §11): memory, processes at once,
 * CPU time per process, its temporary directory and what it leaves in outDir. Read from the
 * environment by the job child (the worker passes the variables on); a job spec may lower each one,
 * never raise it.
 */

export interface JobResources {
  /** Resident memory of a call's processes together (and the heap of each one), MiB. */
  readonly memoryMb: number
  /** Processes a call may have at once. */
  readonly processes: number
  /** CPU seconds each process of a call may use. */
  readonly cpuSec: number
  /** The job's temporary directory (`/tmp` in bubblewrap, `$TMPDIR` under Landlock), MiB. */
  readonly tmpMb: number
  /** What the job's processes add to outDir, MiB. */
  readonly outDirMb: number
}

export const RESOURCE_VARIABLES = {
  memoryMb: "KINTSUGI_JOB_MEMORY_MB",
  processes: "KINTSUGI_JOB_PROCESSES",
  cpuSec: "KINTSUGI_JOB_CPU_SEC",
  tmpMb: "KINTSUGI_JOB_TMP_MB",
  outDirMb: "KINTSUGI_JOB_OUTDIR_MB"
} as const satisfies Record<keyof JobResources, string>

export const DEFAULT_RESOURCES: JobResources = { memoryMb: 1024, processes: 256, cpuSec: 300, tmpMb: 256, outDirMb: 1024 }

/** Lower bounds a setting may not go under: a shell needs a few processes and some memory to start at all. */
const MINIMUM: JobResources = { memoryMb: 16, processes: 4, cpuSec: 1, tmpMb: 1, outDirMb: 1 }
const MAXIMUM = 1_048_576

/** The resources `env` configures, or the problems of the values that are not whole numbers in range. */
export const resourcesFromEnv = (
  env: Readonly<Record<string, string | undefined>>
): { readonly resources: JobResources; readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const read = (key: keyof JobResources): number => {
    const name = RESOURCE_VARIABLES[key]
    const raw = env[name]?.trim() ?? ""
    if (raw === "") return DEFAULT_RESOURCES[key]
    const n = Number(raw)
    if (!/^\d+$/.test(raw) || n < MINIMUM[key] || n > MAXIMUM) {
      problems.push(`${name}=${JSON.stringify(env[name])} is not a whole number from ${MINIMUM[key]} to ${MAXIMUM}`)
      return MINIMUM[key]
    }
    return n
  }
  return {
    resources: {
      memoryMb: read("memoryMb"),
      processes: read("processes"),
      cpuSec: read("cpuSec"),
      tmpMb: read("tmpMb"),
      outDirMb: read("outDirMb")
    },
    problems
  }
}

/** Each resource at the lower of the server's setting and the job's own (a project lowers, never raises). */
export const lowerResources = (server: JobResources, job: Partial<JobResources> | undefined): JobResources => ({
  memoryMb: Math.min(server.memoryMb, job?.memoryMb ?? server.memoryMb),
  processes: Math.min(server.processes, job?.processes ?? server.processes),
  cpuSec: Math.min(server.cpuSec, job?.cpuSec ?? server.cpuSec),
  tmpMb: Math.min(server.tmpMb, job?.tmpMb ?? server.tmpMb),
  outDirMb: Math.min(server.outDirMb, job?.outDirMb ?? server.outDirMb)
})

const MiB = 1024 * 1024

/** The per-process limits that back the watcher: the heap, the largest file (a little over the larger disk limit, so the watcher names the limit), CPU. */
export const rlimitsOf = (r: JobResources) => ({
  dataBytes: r.memoryMb * MiB,
  fileBytes: (Math.max(r.tmpMb, r.outDirMb) + 1) * MiB,
  cpuSec: r.cpuSec
})

/** The sentence a call killed at a limit begins with. */
export const limitMessage = (limit: "memory" | "processes" | "cpu" | "tmp" | "outDir", r: JobResources): string => {
  switch (limit) {
    case "memory":
      return `memory limit ${r.memoryMb} MiB`
    case "processes":
      return `process limit ${r.processes}`
    case "cpu":
      return `CPU time limit ${r.cpuSec} s`
    case "tmp":
      return `temporary space limit ${r.tmpMb} MiB`
    case "outDir":
      return `output directory limit ${r.outDirMb} MiB`
  }
}

/** The name (in the system's temporary directory) of a job's temporary directories, before mkdtemp's suffix. */
export const jobTmpPrefix = (runPrefix: string): string => `kintsugi-job-${runPrefix === "" ? "" : `${runPrefix}-`}`.replace(/-$/, "")

/** The file (in the system's temporary directory) where a job child lists its Landlock calls' session ids, one a line. */
export const jobSessionsFile = (runPrefix: string): string => `${jobTmpPrefix(runPrefix)}.sessions`
