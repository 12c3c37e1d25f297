#!/usr/bin/env bash
# rule-signals: where business rules probably live. Counts per file of words that signal validation,
# state changes, calculations, time rules and authorization, top files by total. Test files are left
# out (read them later for examples). A map for reading, not a finding. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional TOP (default 30).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; TOP="${TOP:-30}"
VAL='throw new [A-Za-z]*(Exception|Error)|raise [A-Za-z]*(Error|Exception)|Preconditions|checkArgument|checkState|@Valid|@NotNull|@NotBlank|@NotEmpty|@Size|@Min|@Max|@Pattern|@Positive|@Email|@Future|@Past|ValidationError|ValidationException|IllegalArgument|IllegalState|[Vv]alidat[a-z]*|[Ii]nvalid|errors\.add|rejectValue|must be|must not|cannot|not allowed'
STA='[Ss]tatus|[Ss]tate[A-Z ._(=]|[Tt]ransition|[Aa]pprov|[Rr]eject|[Cc]ancel|[Ss]ubmit|[Ee]xpire|[Ss]uspend|[Aa]ctivat|[Rr]eopen|[Ll]ifecycle|[Ww]orkflow'
CAL='BigDecimal|Decimal|Money|[Aa]mount|[Pp]rice|[Tt]otal|[Tt]ax|[Ff]ee[sA-Z ]|[Dd]iscount|[Ii]nterest|[Pp]ercent|[Rr]ound(ing)?[A-Z(]|[Qq]uantity|[Bb]alance|[Cc]ommission|[Pp]remium'
TIM='LocalDate|Instant|Duration|Period|[Dd]eadline|[Ee]xpir|[Cc]utoff|[Bb]usinessDay|[Hh]oliday|[Cc]alendar|[Dd]ueDate|[Oo]verdue|[Gg]race'
AUT='hasRole|hasAuthority|@PreAuthorize|@Secured|@RolesAllowed|[Aa]uthoriz|Permission|permission[A-Z_.(]|isAdmin|[Pp]olicy|[Ee]ntitle|[Aa]ccessDenied|[Ff]orbidden'
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name dist -o -name build -o -name target -o -name test -o -name tests -o -name __tests__ \
  -o -name spec -o -name '*.test.*' -o -name '*.spec.*' -o -name '*_test.*' -o -name '*Test.java' \
  -o -name '*Tests.java' -o -name '*Test.kt' -o -name '*Tests.cs' -o -name 'test_*.py' -o -name '*.min.js' \) -prune \
  -o -type f \( -name '*.java' -o -name '*.kt' -o -name '*.scala' -o -name '*.cs' -o -name '*.ts' \
  -o -name '*.tsx' -o -name '*.js' -o -name '*.py' -o -name '*.go' -o -name '*.rb' -o -name '*.php' \
  -o -name '*.rs' -o -name '*.sql' -o -name '*.cob' -o -name '*.cbl' -o -name '*.pls' -o -name '*.pks' \) -print0 \
  | xargs -0 -r grep -HoE "$VAL|$STA|$CAL|$TIM|$AUT" 2>/dev/null \
  | VAL="$VAL" STA="$STA" CAL="$CAL" TIM="$TIM" AUT="$AUT" awk '
      { m = $0; sub(/.*:/, "", m); f = substr($0, 1, length($0) - length(m) - 1)
        if (m ~ ENVIRON["VAL"]) v[f]++; else if (m ~ ENVIRON["STA"]) s[f]++
        else if (m ~ ENVIRON["CAL"]) c[f]++; else if (m ~ ENVIRON["TIM"]) t[f]++; else a[f]++
        all[f]++ }
      END { for (f in all) printf "%d\t%d\t%d\t%d\t%d\t%d\t%s\n", all[f], v[f], s[f], c[f], t[f], a[f], f }' \
  | sort -t "$(printf '\t')" -k1,1nr | head -n "$TOP" \
  | { printf 'total\tvalid\tstate\tcalc\ttime\tauth\tpath\n'; cat; }
