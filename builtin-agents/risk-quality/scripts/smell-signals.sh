#!/usr/bin/env bash
# smell-signals: security and maintainability smells under SRC, one grep pass per rule: SQL built from
# strings, command execution, dynamic code, unsafe deserialization, XSS sinks, weak crypto or
# randomness, TLS verification off, permissive security config, secrets in logs, swallowed errors;
# then counts only for suppressed checks, TODO-style markers and deprecation marks. Per rule: the
# number of lines, the top files and up to EX example lines (cut to 160 characters). Test, vendored
# and minified files are left out. Signals, not findings: read each before reporting it. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional EX (default 6).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; EX="${EX:-6}"
Q="'"
RULES="sql-string-building	(select|insert|update|delete)[^;]*[\"$Q][[:space:]]*(\+|\|\||%[[:space:]]*[(a-z])|f[\"$Q](select|insert|update|delete)[^\"$Q]*\{|(execute|executequery|executeupdate|query|raw|createnativequery|createquery|find_by_sql)[[:space:]]*\([^)]*(\+[[:space:]]*[a-z_]|\\$\{|%[[:space:]]*\(|\.format\()
command-execution	runtime\.getruntime\(\)\.exec|processbuilder|child_process|execsync\(|execfile\(|spawn\([^)]*shell[[:space:]]*:[[:space:]]*true|subprocess\.[a-z_]+\([^)]*shell[[:space:]]*=[[:space:]]*true|os\.(system|popen)\(|(^|[^.a-z_])(exec|system|popen|shell_exec|passthru|proc_open)\(|exec\.command\(
dynamic-code	(^|[^.a-z_])eval\(|new[[:space:]]+function\(|set(timeout|interval)\([[:space:]]*[\"$Q]|scriptengine|__import__\(
unsafe-deserialization	objectinputstream|readobject\(|pickle\.loads?\(|yaml\.load\(|yaml\.unsafe_load|marshal\.loads|binaryformatter|netdatacontractserializer|xmldecoder|(^|[^a-z_])unserialize\(|jsonpickle|enabledefaulttyping|typenamehandling\.(all|auto|objects)
xss-sink	(inner|outer)html[[:space:]]*=|dangerouslysetinnerhtml|document\.write\(|v-html|\|[[:space:]]*safe([^a-z]|$)|mark_safe\(|html\.raw\(|th:utext|bypasssecuritytrust|<%-
weak-crypto-or-random	(^|[^a-z])(md5|sha1|rc4|3des|tripledes|desede)([^a-z0-9]|$)|[\"$Q]des[\"$Q/]|(aes|des)/ecb|math\.random\(|new[[:space:]]+random\(|random\.random\(|(^|[^a-z_])rand\(\)
tls-verification-off	verify[[:space:]]*=[[:space:]]*false|insecureskipverify|rejectunauthorized[[:space:]]*:[[:space:]]*false|trustall|x509trustmanager|allowallhostnameverifier|node_tls_reject_unauthorized|ssl_verify_none|check_hostname[[:space:]]*=[[:space:]]*false|servercertificatevalidationcallback
permissive-security-config	access-control-allow-origin[\"$Q]?[[:space:]]*[:,=][[:space:]]*[\"$Q]?\*|allowedorigins?[^;]*\*|origin[[:space:]]*:[[:space:]]*[\"$Q]\*|csrf\(\)\.disable|\.csrf\([^)]*disable|csrf_exempt|debug[[:space:]]*[:=][[:space:]]*true|permitall\(\)|0\.0\.0\.0/0
secret-in-log	(log|logger|logging|console|print|puts|fmt)[a-z]*\.?[a-z]*\([^)]*(password|passwd|secret|token|apikey|api_key|authorization|ssn|creditcard)
swallowed-error	catch[[:space:]]*(\([^)]*\))?[[:space:]]*\{[[:space:]]*\}|except([[:space:]][^:]*)?:[[:space:]]*pass[[:space:]]*$|on error resume next
@suppressed-check	@suppresswarnings|eslint-disable|#[[:space:]]*noqa|//[[:space:]]*nolint|#pragma warning disable|@ts-ignore|@ts-nocheck|#[[:space:]]*type:[[:space:]]*ignore|nosec|nosonar
@todo-marker	(^|[^a-z])(todo|fixme|hack|xxx)([^a-z]|$)
@deprecated-mark	@deprecated|\[obsolete|deprecated"
files() {
  find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name third_party -o -name .venv \
    -o -name venv -o -name dist -o -name build -o -name target -o -name test -o -name tests \
    -o -name __tests__ -o -name spec -o -name '*.test.*' -o -name '*.spec.*' -o -name '*_test.*' \
    -o -name '*Test.java' -o -name '*Tests.java' -o -name '*Tests.cs' -o -name 'test_*.py' \) -prune \
    -o -type f -size -1024k ! -name '*.min.*' ! -name '*.map' ! -name '*.lock' ! -name '*-lock.json' \
    ! -name '*.md' ! -name '*.svg' -print0
}
while IFS="$(printf '\t')" read -r rule re; do
  hits=$(files | xargs -0 -r grep -HnIiE -e "$re" 2>/dev/null || true)
  n=0; [ -z "$hits" ] || n=$(printf '%s\n' "$hits" | wc -l | tr -d ' ')
  echo "== ${rule#@}: $n lines"
  [ "$n" -gt 0 ] || { echo; continue; }
  printf '%s\n' "$hits" | awk '{ i = match($0, /:[0-9]+:/); if (i) print substr($0, 1, i - 1) }' \
    | sort | uniq -c | sort -rn | head -n 3 | awk '{ c = $1; sub(/^[ \t]*[0-9]+[ \t]/, ""); printf "  %d in %s\n", c, $0 }'
  case "$rule" in @*) ;; *) printf '%s\n' "$hits" | head -n "$EX" | cut -c1-160 ;; esac
  echo
done <<RULES_END
$RULES
RULES_END
