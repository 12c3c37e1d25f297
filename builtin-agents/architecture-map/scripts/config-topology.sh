#!/usr/bin/env bash
# config-topology: lines in configuration, container, deployment and infrastructure files under SRC
# that name hosts, ports, URLs, databases, queues, topics, buckets, images and services. Credentials
# are masked (user:password in URLs, values of password/secret/token/key settings); placeholders such
# as ${VAR} are kept. At most 12 lines per file and MAX lines in all. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional MAX (default 400).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; MAX="${MAX:-400}"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name dist -o -name build -o -name target -o -name test -o -name tests -o -name __tests__ \) -prune \
  -o -type f -size -512k \( -name '*.yml' -o -name '*.yaml' -o -name '*.properties' -o -name '*.toml' \
  -o -name '*.ini' -o -name '*.conf' -o -name '*.cfg' -o -name '*.env' -o -name '.env*' -o -name '*.tf' \
  -o -name '*.tfvars' -o -name '*.hcl' -o -name 'Dockerfile*' -o -name 'Procfile' -o -name '*.xml' \
  -o -name 'appsettings*.json' -o -name 'config*.json' -o -name '*.config' -o -name 'settings.py' \) -print0 \
  | xargs -0 -r grep -HnIiE -m 12 '(://|jdbc:|(^|[^a-z])(host|hostname|port|ports|url|uri|endpoint|dsn|broker|brokers|bootstrap|queue|topic|exchange|bucket|region|database|cluster|image|services|depends_on|connection|redis|kafka|rabbit|amqp|postgres|mysql|mongo|oracle|sqlserver|elastic|s3|sqs|sns|smtp|ldap|grpc|expose|from)[a-z_.-]*["]?[[:space:]]*[:=]|^[[:space:]]*(FROM|EXPOSE|ENTRYPOINT|CMD)[[:space:]])' 2>/dev/null \
  | awk -v sq="'" '{
      i = match($0, /:[0-9]+:/); if (i == 0) next
      loc = substr($0, 1, i + RLENGTH - 1); t = substr($0, i + RLENGTH)
      gsub(/:\/\/[^\/@ :]+:[^\/@ ]+@/, "://***:***@", t)
      low = tolower(t)
      if (match(low, "(pass(word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[a-z0-9_.-]*[\"" sq "]?[ \t]*[:=]")) {
        v = substr(t, RSTART + RLENGTH)
        if (v !~ /^[ \t]*["\047]?(\$\{|\$[A-Z_]|\{\{|%\(|<|[ \t]*$)/) t = substr(t, 1, RSTART + RLENGTH - 1) " ***"
      }
      if (length(t) > 200) t = substr(t, 1, 200) "..."
      print loc " " t
    }' | head -n "$MAX"
