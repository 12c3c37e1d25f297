#!/usr/bin/env bash
# The package as its users get it (docs/kernel.md "Use the kernel as a library"): packs the repository,
# installs the tarball into a new project, type-checks it with tsc and runs the examples of
# docs/kernel.md and docs/testing.md as extracted, each against a scripted model
# (test/package/consumer.ts). Prints the tarball's size and file count, the install's size and each
# check; the last line is "consumer: N passed, N failed". Needs the npm registry (through
# NODE_EXTRA_CA_CERTS and the proxy variables when the machine sets them).
set -uo pipefail
cd "$(dirname "$0")/.."
exec bun test/package/consumer.ts
