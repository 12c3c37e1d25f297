#!/usr/bin/env bash
# domain-vocabulary: candidate domain concepts under SRC. (1) Concept stems: declared type names with
# technical suffixes removed (OrderService, OrderController -> Order), by number of declarations.
# (2) Declared types without a technical suffix, by references in code, with their first declaration.
# (3) SQL tables from CREATE TABLE statements. Test files are left out. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional TOP (default 60).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-60}"
files() {
  find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
    -o -name dist -o -name build -o -name target -o -name test -o -name tests -o -name __tests__ \
    -o -name spec -o -name '*.test.*' -o -name '*.spec.*' -o -name '*_test.*' -o -name '*Test.java' \
    -o -name '*Tests.java' -o -name '*Test.kt' -o -name '*Tests.cs' -o -name 'test_*.py' \) -prune \
    -o -type f \( -name '*.java' -o -name '*.kt' -o -name '*.scala' -o -name '*.cs' -o -name '*.ts' \
    -o -name '*.tsx' -o -name '*.js' -o -name '*.py' -o -name '*.go' -o -name '*.rb' -o -name '*.php' \
    -o -name '*.rs' -o -name '*.swift' -o -name '*.dart' -o -name '*.sql' -o -name '*.prisma' \) -print0
}
decls=$(files | xargs -0 -r grep -HnoE '(^|[^A-Za-z0-9_])(class|interface|enum|struct|record|trait|object|type|model)[[:space:]]+[A-Z][A-Za-z0-9_]*|[Cc][Rr][Ee][Aa][Tt][Ee][[:space:]]+[Tt][Aa][Bb][Ll][Ee][[:space:]]+([Ii][Ff][[:space:]]+[Nn][Oo][Tt][[:space:]]+[Ee][Xx][Ii][Ss][Tt][Ss][[:space:]]+)?["`]?[A-Za-z_][A-Za-z0-9_.]*' 2>/dev/null || true)
SUF='(Controller|Service|Services|Repository|Repo|Dao|DAO|Dto|DTO|Entity|Model|ViewModel|View|Form|Request|Response|Command|Query|Handler|Listener|Event|Factory|Builder|Mapper|Converter|Validator|Config|Configuration|Module|Impl|Adapter|Client|Provider|Manager|Helper|Util|Utils|Exception|Error|Props|Component|Resource|Schema|Serializer|Spec|Test|Tests|Mock|Fake|Stub|Type|Interface|Base|Abstract)+$'
{ printf '%s\n' "$decls"; printf '%s\n' '@@REFS@@'
  files | xargs -0 -r grep -ohE '[A-Z][A-Za-z0-9_]+' 2>/dev/null || true; } \
  | SUF="$SUF" TOP="$TOP" awk '
    $0 == "@@REFS@@" { refs = 1; next }
    !refs {
      if ($0 == "") next
      i = match($0, /:[0-9]+:/); if (i == 0) next
      loc = substr($0, 1, i + RLENGTH - 2); m = substr($0, i + RLENGTH)
      sub(/^[^A-Za-z]+/, "", m); n = split(m, w, /[[:space:]"`]+/); name = w[n]
      if (tolower(w[1]) == "create") { if (!(name in tab)) { tab[name] = loc; nt++ }; next }
      if (!(name in first)) first[name] = w[1] " at " loc
      stem = name; sub(ENVIRON["SUF"], "", stem)
      if (stem != "" && !((stem, name) in counted)) { counted[stem, name] = 1; stems[stem]++ }
      if (stem == name) plain[name] = 1
      next
    }
    ($0 in plain) { uses[$0]++ }
    END {
      top = ENVIRON["TOP"] + 0
      print "== concept stems: declarations sharing the stem (top " top ")"
      for (s in stems) printf "%d\t%s\n", stems[s], s | "sort -t \"\t\" -k1,1nr | head -n " top
      close("sort -t \"\t\" -k1,1nr | head -n " top)
      print ""; print "== plain type names: references in code, first declaration (top " top ")"
      for (p in plain) printf "%d\t%s\t%s\n", uses[p], p, first[p] | "sort -t \"\t\" -k1,1nr | head -n " top
      close("sort -t \"\t\" -k1,1nr | head -n " top)
      print ""; print "== SQL tables (" nt + 0 ")"
      for (t in tab) printf "%s\t%s\n", t, tab[t] | "sort | head -n " (top * 2)
      close("sort | head -n " (top * 2))
    }'
