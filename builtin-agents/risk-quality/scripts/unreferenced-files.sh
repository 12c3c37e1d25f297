#!/usr/bin/env bash
# unreferenced-files: dead-code candidates under SRC: code files whose base name (without extension)
# appears as a word in no other code or configuration file. Entry-point names (index, main, app,
# __init__, setup, Program, ...) and test files are not candidates; base names shared by several
# files are skipped and counted. Reflection, dependency injection, routing by convention and
# build-tool wiring make this a list of candidates to check, never proof. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional MAX (default 60).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; MAX="${MAX:-60}"
PRUNE=( \( -name .git -o -name node_modules -o -name vendor -o -name third_party -o -name .venv -o -name venv \
  -o -name dist -o -name build -o -name target -o -name coverage \) -prune )
CODE=( \( -name '*.java' -o -name '*.kt' -o -name '*.scala' -o -name '*.cs' -o -name '*.ts' -o -name '*.tsx' \
  -o -name '*.js' -o -name '*.jsx' -o -name '*.mjs' -o -name '*.vue' -o -name '*.svelte' -o -name '*.py' \
  -o -name '*.go' -o -name '*.rb' -o -name '*.php' -o -name '*.rs' -o -name '*.swift' -o -name '*.dart' \) )
CONF=( \( -name '*.json' -o -name '*.y*ml' -o -name '*.xml' -o -name '*.html' -o -name '*.properties' \
  -o -name '*.toml' -o -name '*.gradle' -o -name '*.kts' -o -name '*.cfg' -o -name '*.ini' -o -name '*.csproj' \) )
TEST_RE='(^|/)(test|tests|__tests__|spec|specs|e2e)/|\.(test|spec)\.[a-z]+$|_test\.[a-z]+$|(^|/)test_[^/]*\.py$|(Test|Tests|IT|Spec)\.[a-z]+$|\.d\.ts$'
ENTRY_RE='^(index|main|app|App|__init__|__main__|setup|conftest|manage|wsgi|asgi|Program|Startup|mod|lib|server|cli|config|settings|urls|routes|[a-z]*[Aa]pplication)$'
cands=$(find "$SRC" "${PRUNE[@]}" -o -type f "${CODE[@]}" -print | awk -v t="$TEST_RE" -v e="$ENTRY_RE" '
  { p = $0; b = p; sub(/.*\//, "", b); sub(/\.[^.]*$/, "", b)
    if (p ~ t || b ~ e || length(b) < 3) next
    n[b]++; path[b] = p }
  END { for (b in n) if (n[b] == 1) printf "%s\t%s\n", b, path[b]; else printf "%s\t%s\n", b, "@shared" }' 2>/dev/null)
[ -n "$cands" ] || { echo "no candidate files under $SRC"; exit 0; }
shared=$(printf '%s\n' "$cands" | awk -F '\t' '$2 == "@shared"' | wc -l | tr -d ' ')
cands=$(printf '%s\n' "$cands" | awk -F '\t' '$2 != "@shared"')
refs=$(find "$SRC" "${PRUNE[@]}" -o -type f \( "${CODE[@]}" -o "${CONF[@]}" \) -size -1024k -print0 \
  | xargs -0 -r grep -oHwF -f <(printf '%s\n' "$cands" | cut -f1) 2>/dev/null || true)
echo "candidates: code files whose base name no other file mentions (base names shared by several files, skipped: $shared)"
{ printf '%s\n' "$cands"; printf '@@REFS@@\n'; printf '%s\n' "$refs"; } | awk -F '\t' '
  $0 == "@@REFS@@" { r = 1; next }
  !r { own[$1] = $2; next }
  { m = $0; sub(/.*:/, "", m); f = substr($0, 1, length($0) - length(m) - 1)
    if ((m in own) && own[m] != f) used[m] = 1 }
  END { for (b in own) if (!(b in used)) print own[b] }' | LC_ALL=C sort | head -n "$MAX"
