#!/usr/bin/env bash
# churn-hotspots: files that change often and are big, from git history of the repository holding
# SRC (only paths under SRC). score = commits x current lines. Also lines changed and the number of
# distinct authors (a bus-factor signal; no names printed). Read-only git commands only.
# Use: first line SRC='<source dir>'; optional SINCE (default '24 months ago'), TOP (default 25).
set -eu
SRC="${SRC:-.}"; SINCE="${SINCE:-24 months ago}"; TOP="${TOP:-25}"
# Like the kernel's git tool: never discover a repository above the workspace root (the cwd).
GIT_CEILING_DIRECTORIES="$(dirname "$(pwd -P)")"; export GIT_CEILING_DIRECTORIES
g() { git -C "$SRC" -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.quotePath=false --no-pager "$@"; }
if ! g rev-parse --verify -q HEAD >/dev/null 2>&1; then
  echo "no git history at $SRC (not a repository, no commits, or git refused it): no hotspots"; exit 0
fi
top=$(g rev-parse --show-toplevel); here=$(pwd -P)
case "$top" in "$here") pre="" ;; "$here"/*) pre="${top#"$here"/}/" ;; *) pre="$top/" ;; esac
echo "window: since $SINCE; shallow clone: $(g rev-parse --is-shallow-repository 2>/dev/null || echo unknown)"
echo "score commits lines_changed authors lines path"
g log --since="$SINCE" --no-merges --no-renames --no-ext-diff --no-textconv --numstat --format='@%ae' -- . \
  | awk -F '\t' '
      /^@/ { who = substr($0, 2); next }
      NF == 3 { p = $3; c[p]++; ch[p] += ($1 == "-" ? 0 : $1) + ($2 == "-" ? 0 : $2)
                if (!((p, who) in seen)) { seen[p, who] = 1; a[p]++ } }
      END { for (p in c) printf "%d\t%d\t%d\t%s\n", c[p], ch[p], a[p], p }' \
  | sort -t "$(printf '\t')" -k1,1nr | head -n 400 \
  | while IFS="$(printf '\t')" read -r commits churn authors path; do
      f="$top/$path"
      [ -f "$f" ] || continue
      lines=$(wc -l < "$f" | tr -d ' ')
      printf '%d\t%d\t%d\t%d\t%d\t%s\n' "$((commits * lines))" "$commits" "$churn" "$authors" "$lines" "$pre$path"
    done \
  | sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP"
