#!/usr/bin/env bash
# git-summary: history facts for the repository containing SRC: HEAD, age, commit and contributor
# counts (no names), shallow-clone flag, commits per month and per top-level directory over the last
# 12 months. Read-only git commands only; prints a note and stops when there is no usable repository.
# Use: paste as the shell command with a first line SRC='<source dir>'.
set -eu
SRC="${SRC:-.}"
# Like the kernel's git tool: never discover a repository above the workspace root (the cwd).
GIT_CEILING_DIRECTORIES="$(dirname "$(pwd -P)")"; export GIT_CEILING_DIRECTORIES
g() { git -C "$SRC" -c core.fsmonitor=false -c core.hooksPath=/dev/null --no-pager "$@"; }
if ! g rev-parse --verify -q HEAD >/dev/null 2>&1; then
  echo "no git history at $SRC (not a repository, no commits, or git refused it): skip history"; exit 0
fi
top=$(g rev-parse --show-toplevel); here=$(pwd -P)
case "$top" in "$here") top=. ;; "$here"/*) top="${top#"$here"/}" ;; esac
echo "repository top (relative to the workspace root when inside it): $top"
echo "SRC inside repository at: $(g rev-parse --show-prefix)"
echo "HEAD: $(g rev-parse HEAD)  branch: $(g branch --show-current 2>/dev/null || true)"
echo "shallow clone: $(g rev-parse --is-shallow-repository 2>/dev/null || echo unknown)"
echo "commits: $(g rev-list --count HEAD)"
echo "first commit: $(g log --max-parents=0 --format=%as HEAD | tail -n 1)  last commit: $(g log -1 --format=%as)"
echo "distinct author emails: $(g log --format=%ae | sort -u | wc -l)  in last 12 months: $(g log --since='12 months ago' --format=%ae | sort -u | wc -l)"
echo
echo "== commits per month, last 12 months"
g log --since='12 months ago' --format=%ad --date=format:%Y-%m | sort | uniq -c
echo
echo "== file changes per top-level path, last 12 months (paths relative to the repository top)"
g log --since='12 months ago' --no-renames --format= --name-only \
  | awk -F/ 'NF == 0 || $0 == "" { next } { print (NF > 1 ? $1 "/" : "(top-level files)") }' \
  | sort | uniq -c | sort -rn | head -n 25
