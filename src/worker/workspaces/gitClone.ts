/**
 * A workspace's sources from a git URL: `https` only, through the outbound URL policy (resolved once,
 * the connection pinned to the checked address), then one shallow clone by the process runner with
 * the shared git hardening, no credentials, no redirects, symlinks checked out as plain files, and
 * bounded in time, disk, memory and processes.
 */
import { Effect, Either } from "effect"
import { checkTargetRule, systemResolver, type CheckedTarget, type NetworkAllowance, type Resolver } from "../../net/urlPolicy.ts"
import { diskUsage } from "../../tools/diskUsage.ts"
import { gitHardeningEnvironment, hardenedGitPrefix } from "../../tools/gitHardening.ts"
import { makeProcessRunner } from "../../tools/ProcessRunner.ts"
import type { JobResources } from "../../tools/jobResources.ts"

export interface CloneLimits {
  /** The whole clone, from connect to checkout. */
  readonly timeoutSec: number
  /** What the clone may put on disk (objects and checkout). */
  readonly maxMb: number
}

export const DEFAULT_CLONE_LIMITS: CloneLimits = { timeoutSec: 120, maxMb: 256 }

export interface ClonePolicy {
  /** Who may be reached besides public addresses: false in production, `"loopback"` for tests' servers. */
  readonly allow: NetworkAllowance
  readonly resolve: Resolver
  /** A CA bundle git trusts instead of the system's (tests' self-signed servers). */
  readonly caFile?: string
}

export const DEFAULT_CLONE_POLICY: ClonePolicy = { allow: false, resolve: systemResolver }

/**
 * The URL checked for a clone: an `https` URL (git://, ssh, scp-like `host:path`, file:// and http://
 * are refused), no user or password in it, a host that resolves only to addresses the policy allows.
 * The problem in words (left), or the target with the addresses it was checked at.
 */
export const checkGitUrl = async (raw: string, policy: ClonePolicy): Promise<Either.Either<CheckedTarget, string>> => {
  const trimmed = raw.trim()
  if (trimmed === "") return Either.left("is required")
  if (!URL.canParse(trimmed) || new URL(trimmed).protocol !== "https:") {
    return Either.left("must be an https:// URL (http, ssh, git, file and host:path addresses are refused)")
  }
  const checked = await checkTargetRule(trimmed, policy.allow, policy.resolve)
  return Either.mapLeft(checked, (r) =>
    r.rule === "credentials" ? "must not carry a user name or password (only public repositories can be cloned)" : r.problem
  )
}

/** Config for this one command, on top of the shared hardening (which refuses every transport). */
const cloneConfig = (target: CheckedTarget, policy: ClonePolicy): Array<string> => {
  const port = target.url.port === "" ? "443" : target.url.port
  const address = target.addresses[0]!
  return [
    "protocol.https.allow=always",
    "http.followRedirects=false",
    "core.symlinks=false",
    "transfer.fsckObjects=true",
    "init.templateDir=",
    "http.lowSpeedLimit=1024",
    "http.lowSpeedTime=30",
    // git connects to the address the policy checked, not to a second DNS answer.
    ...(target.literal ? [] : [`http.curloptResolve=${target.host}:${port}:${address.includes(":") ? `[${address}]` : address}`]),
    ...(policy.caFile === undefined ? [] : [`http.sslCAInfo=${policy.caFile}`])
  ]
}

/** Why a clone did not complete, in words. */
export type CloneOutcome = { readonly ok: true } | { readonly ok: false; readonly problem: string }

const lastLines = (output: string): string =>
  output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("Cloning into"))
    .slice(-3)
    .join(" ")
    .slice(0, 500)

/**
 * Clones the default branch of `target` (depth 1, no tags, no submodules) into `into` (which must not
 * exist yet), run from `folder`, whose growth counts against `limits.maxMb`. Never fails: a refusal,
 * time-out, limit or git error is the outcome's problem.
 */
export const cloneRepository = (
  target: CheckedTarget,
  folder: string,
  into: string,
  policy: ClonePolicy,
  limits: CloneLimits
): Effect.Effect<CloneOutcome> =>
  Effect.scoped(
    Effect.gen(function* () {
      const resources: JobResources = { memoryMb: 1024, processes: 32, cpuSec: limits.timeoutSec, tmpMb: 64, outDirMb: limits.maxMb }
      const runner = yield* makeProcessRunner({ resources, outDir: folder })
      const argv = [
        ...hardenedGitPrefix(cloneConfig(target, policy)),
        "clone",
        "--quiet",
        "--depth",
        "1",
        "--single-branch",
        "--no-tags",
        "--no-recurse-submodules",
        "--",
        target.url.href,
        into
      ] as const
      const result = yield* Effect.either(
        runner.run({
          argv,
          cwd: folder,
          timeoutMs: limits.timeoutSec * 1000,
          newSession: true,
          env: { ...gitHardeningEnvironment(), GIT_ALLOW_PROTOCOL: "https" }
        })
      )
      if (Either.isLeft(result)) return { ok: false, problem: `git could not start: ${result.left.message}` }
      const r = result.right
      if (r.timedOut) return { ok: false, problem: `the clone did not finish within ${limits.timeoutSec} s` }
      if (r.limit !== undefined || r.signal === "SIGXFSZ") {
        return {
          ok: false,
          problem:
            r.limit?.includes("output directory") === false
              ? `the clone was stopped: ${r.limit}`
              : `the repository is larger than ${limits.maxMb} MiB`
        }
      }
      if (r.exitCode !== 0)
        return { ok: false, problem: `git clone failed: ${lastLines(r.output) || `exit ${String(r.exitCode ?? r.signal)}`}` }
      // The runner's disk watch samples while git runs; a clone that finished between two samples is measured here.
      const size = yield* Effect.promise(() => diskUsage(folder))
      return size > limits.maxMb * 1024 * 1024 ? { ok: false, problem: `the repository is larger than ${limits.maxMb} MiB` } : { ok: true }
    })
  )
