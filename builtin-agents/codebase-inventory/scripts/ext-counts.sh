#!/usr/bin/env bash
# ext-counts: files and lines per extension under SRC (most lines first), then the directories
# skipped as dependencies, VCS data or build output, with their file counts. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'. Optional TOP (default 40).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-40}"
SKIP=( \( -name .git -o -name node_modules -o -name vendor -o -name third_party -o -name .venv \
  -o -name venv -o -name __pycache__ -o -name dist -o -name build -o -name target -o -name .next \
  -o -name .gradle -o -name coverage -o -name bin -o -name obj \) )
echo "== lines files extension (text files counted for lines; binary files count as 0 lines)"
find "$SRC" "${SKIP[@]}" -prune -o -type f -print0 \
  | xargs -0 -r grep -c -H -I '' 2>/dev/null \
  | awk '{
      n = $0; sub(/.*:/, "", n); p = substr($0, 1, length($0) - length(n) - 1)
      f = p; sub(/.*\//, "", f)
      if (f ~ /^[^.]+$/ || f ~ /^\.[^.]*$/) e = f; else { e = f; sub(/.*\./, ".", e) }
      files[e]++; lines[e] += n; tf++; tl += n
    }
    END {
      printf "TOTAL\t%d files\t%d lines\n", tf, tl
      for (e in files) printf "%d\t%d\t%s\n", lines[e], files[e], e
    }' \
  | { IFS= read -r total || true; printf '%s\n' "$total"; sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP"; }
echo
echo "== skipped directories (files inside)"
find "$SRC" "${SKIP[@]}" -prune -print0 2>/dev/null \
  | while IFS= read -r -d '' d; do
      [ -d "$d" ] || continue
      printf '%d\t%s/\n' "$(find "$d" -type f 2>/dev/null | wc -l)" "$d"
    done | sort -rn | head -n 30
