#!/usr/bin/env bash
# complexity-signals: per code file under SRC, the number of branch points (if, for, while, case,
# catch, &&, || and the like, comments included), lines, deepest indentation in columns (tab = 4) and
# lines over 140 characters. Lists the top files by branch points and by indentation, and counts of
# very long files. Files with lines over 1000 characters are reported as probably minified or
# generated and left out of the rankings. Test and vendored files are left out. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional TOP (default 20).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-20}"
T="$(printf '\t')"
stats=$(find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name third_party -o -name .venv \
  -o -name venv -o -name dist -o -name build -o -name target -o -name test -o -name tests -o -name __tests__ \
  -o -name spec -o -name '*.test.*' -o -name '*.spec.*' -o -name '*_test.*' -o -name '*Test.java' \
  -o -name '*Tests.java' -o -name '*Tests.cs' -o -name 'test_*.py' \) -prune -o -type f \( -name '*.java' \
  -o -name '*.kt' -o -name '*.scala' -o -name '*.cs' -o -name '*.ts' -o -name '*.tsx' -o -name '*.js' \
  -o -name '*.jsx' -o -name '*.py' -o -name '*.go' -o -name '*.rb' -o -name '*.php' -o -name '*.rs' \
  -o -name '*.swift' -o -name '*.dart' -o -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.h' \
  -o -name '*.vb' -o -name '*.cbl' -o -name '*.cob' -o -name '*.sql' \) ! -name '*.min.*' -print0 \
  | xargs -0 -r awk '
      function flush() { if (f != "") printf "%d\t%d\t%d\t%d\t%d\t%s\n", br, FNRprev, ind, lng, huge, f }
      FNR == 1 { flush(); f = FILENAME; br = 0; ind = 0; lng = 0; huge = 0 }
      { FNRprev = FNR; s = " " $0 " "
        br += gsub(/[^A-Za-z0-9_](if|for|foreach|while|case|catch|except|elif|elsif|when|unless|until)[^A-Za-z0-9_]/, " ", s)
        br += gsub(/&&|\|\|/, " ", s)
        L = length($0); if (L > 140) lng++; if (L > 1000) huge = 1
        if ($0 ~ /[^ \t]/) { match($0, /^[ \t]*/); w = substr($0, 1, RLENGTH); nt = gsub(/\t/, "", w)
          c = RLENGTH + 3 * nt; if (c > ind) ind = c } }
      END { flush() }' 2>/dev/null || true)
[ -n "$stats" ] || { echo "no code files found under $SRC"; exit 0; }
echo "== top by branch points: branches lines max_indent long_lines path"
printf '%s\n' "$stats" | awk -F "$T" '$5 == 0' | sort -t "$T" -k1,1nr | head -n "$TOP" | cut -f1-4,6
echo
echo "== top by indentation depth (columns): max_indent branches lines path"
printf '%s\n' "$stats" | awk -F "$T" -v OFS="$T" '$5 == 0 { print $3, $1, $2, $6 }' | sort -t "$T" -k1,1nr | head -n "$TOP"
echo
printf '%s\n' "$stats" | awk -F "$T" '
  { n++; if ($5) m++; else { if ($2 > 500) a++; if ($2 > 1000) b++; if ($2 > 3000) c++ } }
  END { printf "files: %d; over 500 lines: %d; over 1000: %d; over 3000: %d; probably minified or generated: %d\n", n, a, b, c, m }'
printf '%s\n' "$stats" | awk -F "$T" '$5 == 1 { print "  minified or generated? " $6 }' | head -n 10
