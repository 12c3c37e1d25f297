#!/usr/bin/env bash
# largest-files: the biggest files by bytes (any file: finds data dumps, binaries, bundles) and the
# longest text files by lines (finds god files and generated code) under SRC. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'. Optional TOP (default 20).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-20}"
SKIP=( \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \) )
echo "== bytes path"
find "$SRC" "${SKIP[@]}" -prune -o -type f -print0 \
  | xargs -0 -r wc -c 2>/dev/null \
  | awk '{ n = $1; sub(/^[ \t]*[0-9]+[ \t]/, ""); if ($0 != "total") printf "%d\t%s\n", n, $0 }' \
  | sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP"
echo
echo "== lines path (text files only)"
find "$SRC" "${SKIP[@]}" -prune -o -type f -print0 \
  | xargs -0 -r grep -c -H -I '' 2>/dev/null \
  | awk '{ n = $0; sub(/.*:/, "", n); if (n > 0) printf "%d\t%s\n", n, substr($0, 1, length($0) - length(n) - 1) }' \
  | sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP"
