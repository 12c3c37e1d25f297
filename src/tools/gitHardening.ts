/**
 * The hardening every git invocation of ours gets, the model's `git` tool and `commitOutputs` alike:
 * no hooks, fsmonitor, pager, signing, transport, system/global config or implicit bare repository.
 */

/** Config overrides (command-line config wins over the repository's): nothing the repository says runs code. */
const GIT_HARDENING_CONFIG: ReadonlyArray<string> = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.pager=cat",
  "core.sshCommand=false",
  "core.askPass=false",
  "core.attributesFile=/dev/null",
  "diff.external=",
  "log.showSignature=false",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "gpg.program=false",
  "gpg.openpgp.program=false",
  "gpg.x509.program=false",
  "gpg.ssh.program=false",
  "protocol.allow=never",
  "credential.helper=",
  "diff.ignoreSubmodules=all",
  "submodule.recurse=false",
  "status.submoduleSummary=false",
  // A directory made into a bare repository (HEAD, objects/, refs/, config: plain files a job can write) is never discovered.
  "safe.bareRepository=explicit"
]

/** Global flags placed before the subcommand. */
const GIT_GLOBAL_FLAGS: ReadonlyArray<string> = ["--no-optional-locks", "--no-pager"]

/** `git -c k=v … <global flags>`, then `extraConfig` (the caller's own `k=v`), ready for the subcommand. */
export const hardenedGitPrefix = (extraConfig: ReadonlyArray<string> = []): [string, ...Array<string>] => [
  "git",
  ...[...GIT_HARDENING_CONFIG, ...extraConfig].flatMap((kv) => ["-c", kv]),
  ...GIT_GLOBAL_FLAGS
]

/** The environment every git of ours runs with (on top of whatever the caller's runner allows). */
export const gitHardeningEnvironment = (): Record<string, string> => ({
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  // Set and empty: no transport at all, whatever protocol.*.allow the repository config says.
  GIT_ALLOW_PROTOCOL: "",
  GIT_NO_LAZY_FETCH: "1",
  GIT_OPTIONAL_LOCKS: "0",
  GIT_PAGER: "cat",
  GIT_ATTR_NOSYSTEM: "1"
})
