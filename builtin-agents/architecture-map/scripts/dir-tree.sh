#!/usr/bin/env bash
# dir-tree: the directory tree of SRC down to DEPTH levels, each directory with the number of files
# below it (recursive), skipping dependencies, VCS data and build output. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional DEPTH (default 3).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; DEPTH="${DEPTH:-3}"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name __pycache__ -o -name dist -o -name target -o -name .next -o -name .gradle \) -prune \
  -o -type f -print \
  | awk -v root="$SRC" -v depth="$DEPTH" '
      { p = substr($0, length(root) + 2); n = split(p, a, "/"); pre = ""
        for (i = 1; i < n && i <= depth; i++) { pre = pre (i > 1 ? "/" : "") a[i]; c[pre]++ }
        total++ }
      END { printf "%s/ (%d files)\n", root, total
            for (k in c) { s = k "/"; gsub(/\//, "\001", s); printf "%s\t%s\t%d\n", s, k, c[k] } }' \
  | { IFS= read -r head || true; printf '%s\n' "$head"; LC_ALL=C sort; } \
  | awk -F '\t' 'NR == 1 { print; next }
      { n = split($2, a, "/"); ind = ""; for (i = 1; i < n; i++) ind = ind "  "
        printf "%s%s/ (%d)\n", ind, a[n], $3 }'
