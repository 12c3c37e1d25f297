#!/usr/bin/env bash
# secret-scan: locations of likely hard-coded secrets under SRC, as "path:line<TAB>rule<TAB>context".
# Never prints the matched text. context = test, example, config or code, from the path. The rule
# config-secret (an unquoted value after a password, secret, token or key setting) runs on config
# files only. At most MAX locations per rule; counts per rule at the end. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional MAX (default 25).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; MAX="${MAX:-25}"
Q="'"
KEYS='([Pp][Aa][Ss][Ss]([Ww][Oo][Rr][Dd]|[Ww][Dd])?|[Ss][Ee][Cc][Rr][Ee][Tt]|[Tt][Oo][Kk][Ee][Nn]|[Aa][Pp][Ii]_?[Kk][Ee][Yy]|[Aa][Cc][Cc][Ee][Ss][Ss]_?[Kk][Ee][Yy])[A-Za-z_]*'
RULES="aws-access-key	AKIA[0-9A-Z]{16}
private-key	-----BEGIN ([A-Z]+ )?PRIVATE KEY
github-token	gh[pousr]_[A-Za-z0-9]{36}
slack-token	xox[abprs]-[A-Za-z0-9-]{10,}
google-api-key	AIza[0-9A-Za-z_-]{35}
stripe-live-key	[sr]k_live_[0-9A-Za-z]{20,}
jwt	eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.
url-credentials	[A-Za-z][A-Za-z0-9+.-]*://[^/:@[:space:]\"$Q]+:[^/@[:space:]\"$Q\$]{3,}@
assigned-secret	$KEYS[\"$Q]?[[:space:]]*[:=][[:space:]]*[\"$Q][^\"$Q[:space:]\$%{<]{6,}[\"$Q]
config-secret	$KEYS[[:space:]]*[:=][[:space:]]*[^[:space:]\"$Q\$%{<#][^[:space:]]{3,}"
files() {
  find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
    -o -name dist -o -name build -o -name target \) -prune -o -type f -size -1024k \
    ! -name '*.lock' ! -name '*-lock.json' ! -name '*.min.js' ! -name '*.map' "$@" -print0
}
counts=""
while IFS="$(printf '\t')" read -r rule re; do
  if [ "$rule" = config-secret ]; then
    set -- \( -name '*.yml' -o -name '*.yaml' -o -name '*.properties' -o -name '*.ini' -o -name '*.toml' \
      -o -name '*.env' -o -name '.env*' -o -name '*.conf' -o -name '*.cfg' -o -name '*.tfvars' \)
  else set --; fi
  out=$(files "$@" | xargs -0 -r grep -HnIE -e "$re" 2>/dev/null | awk -v rule="$rule" '{
      i = match($0, /:[0-9]+:/); if (i == 0) next
      loc = substr($0, 1, i + RLENGTH - 2); p = tolower(substr($0, 1, i - 1)); ctx = "code"
      if (p ~ /(^|\/)(test|tests|__tests__|spec|fixtures?|testdata|mocks?)(\/|$)|[._-](test|spec)\./) ctx = "test"
      else if (p ~ /example|sample|template|demo|\.dist$|readme|docs?\//) ctx = "example"
      else if (p ~ /\.(ya?ml|json|properties|ini|toml|env|conf|cfg|xml|tf|tfvars)$|(^|\/)\.env/) ctx = "config"
      printf "%s\t%s\t%s\n", loc, rule, ctx }' || true)
  if [ -n "$out" ]; then
    printf '%s\n' "$out" | head -n "$MAX"
    counts="$counts$(printf '%s\n' "$out" | wc -l | tr -d ' ')	$rule
"
  fi
done <<RULES_END
$RULES
RULES_END
echo
echo "== counts per rule"
printf '%s' "$counts"
