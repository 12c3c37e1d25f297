/**
 * A stand-in for a default container: runs a command where user namespaces, every other new
 * namespace and mounts are refused (containerRules, as Docker's default seccomp profile does), so
 * bubblewrap cannot start and `KINTSUGI_SANDBOX=auto` must use Landlock. `bun userNamespaceJail.ts exec
 * <command…>` applies the filter (with no_new_privs) and becomes the command; `--write-filter <file>`
 * writes the BPF program for `bwrap --seccomp` instead.
 */
import { writeFileSync } from "node:fs"
import { installSeccomp, prepareExecve, setNoNewPrivs } from "../../src/tools/landlock/linuxCalls.ts"
import { buildFilter, containerRules, currentArch } from "../../src/tools/landlock/seccompFilter.ts"

const JAIL = new URL(import.meta.url).pathname

/** `argv` run inside the jail (argv[0] an absolute path), by this process's Bun. */
export const jailArgv = (argv: ReadonlyArray<string>): Array<string> => [process.execPath, JAIL, "exec", ...argv]

/** The container filter's BPF bytes for this machine. */
export const containerFilter = (): Uint8Array => {
  const arch = currentArch()
  if (arch === undefined) throw new Error(`no seccomp filter for ${process.arch}`)
  return buildFilter(arch, containerRules)
}

if (import.meta.main) {
  const [mode, ...rest] = process.argv.slice(2)
  if (mode === "--write-filter" && rest[0] !== undefined) {
    writeFileSync(rest[0], containerFilter())
  } else if (mode === "exec" && rest[0] !== undefined) {
    const exe = rest[0].includes("/") ? rest[0] : Bun.which(rest[0])
    if (exe === null) throw new Error(`${rest[0]}: not found`)
    const env: Record<string, string> = {}
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
    const exec = prepareExecve([exe, ...rest.slice(1)], env)
    setNoNewPrivs()
    installSeccomp(containerFilter())
    exec()
  } else {
    process.stderr.write("usage: userNamespaceJail.ts exec <command…> | --write-filter <file>\n")
    process.exit(2)
  }
}
