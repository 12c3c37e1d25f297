#!/usr/bin/env bash
# import-edges: import, require, use and include statements under SRC aggregated into edges
# "count  source-module  kind  target". source-module = the first DEPTH directories of the importing
# file (relative to SRC). kind: in = a relative import resolved inside SRC (target = its module),
# pkg = a package or namespace name cut to SEGS segments, out = a relative import leaving SRC.
# A signal to read from, not a parser: confirm an edge by grepping the importing lines. Read-only.
# Use: first line SRC='<source dir>'; optional DEPTH (default 2), SEGS (default 3), TOP (default 150).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; DEPTH="${DEPTH:-2}"; SEGS="${SEGS:-3}"; TOP="${TOP:-150}"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name third_party -o -name .venv \
  -o -name venv -o -name dist -o -name build -o -name target \) -prune -o -type f \( -name '*.ts' \
  -o -name '*.tsx' -o -name '*.js' -o -name '*.jsx' -o -name '*.mjs' -o -name '*.cjs' -o -name '*.vue' \
  -o -name '*.svelte' -o -name '*.py' -o -name '*.java' -o -name '*.kt' -o -name '*.scala' \
  -o -name '*.go' -o -name '*.cs' -o -name '*.rs' -o -name '*.php' -o -name '*.rb' -o -name '*.c' \
  -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.swift' -o -name '*.dart' \) -print0 \
  | xargs -0 -r grep -HnE '^[[:space:]]*(import|from|export|using|use|#[[:space:]]*include|require|require_relative|include|include_once|require_once)[[:space:](]|require\(|import\(|^[[:space:]]*([A-Za-z_.]+[[:space:]]+)?"[^"]+"$' 2>/dev/null \
  | awk -v root="$SRC" -v depth="$DEPTH" -v segs="$SEGS" -v sq="'" '
    function norm(p,   n, a, o, i, k, r) {
      n = split(p, a, "/"); k = 0
      for (i = 1; i <= n; i++) {
        if (a[i] == "" || a[i] == ".") continue
        if (a[i] == ".." && k > 0 && o[k] != "..") { k--; continue }
        o[++k] = a[i]
      }
      r = ""; for (i = 1; i <= k; i++) r = r (i > 1 ? "/" : "") o[i]
      return r
    }
    function under(p) { if (rootn == "") return p; if (p == rootn) return ""
      if (index(p, rootn "/") == 1) return substr(p, length(rootn) + 2); return "" }
    function modof(d,   n, a, i, r) { n = split(d, a, "/"); r = ""
      for (i = 1; i <= n && i <= depth; i++) if (a[i] != "") r = r (r == "" ? "" : "/") a[i]
      return r == "" ? "." : r }
    function isdir(p,   cmd, r, q) {
      if (p in seen) return seen[p]
      q = p; gsub(sq, sq "\\" sq sq, q)
      cmd = "test -d " sq q sq " && echo y || echo n"; r = "n"; cmd | getline r; close(cmd)
      seen[p] = (r == "y"); return seen[p]
    }
    function trunc(s, sep,   n, a, i, r) { n = split(s, a, sep); r = ""
      for (i = 1; i <= n && i <= segs; i++) r = r (i > 1 ? sep : "") a[i]
      return r }
    BEGIN { rootn = norm(root) }
    {
      i = match($0, /:[0-9]+:/); if (i == 0) next
      file = substr($0, 1, i - 1); t = substr($0, i + RLENGTH); sub(/^[ \t]+/, "", t)
      ext = file; sub(/.*\./, "", ext); fdir = norm(file); sub(/\/?[^\/]*$/, "", fdir)
      src = modof(under(fdir)); q = ""; rel = 0
      if (ext != "go" && t !~ /^(import|from|export|using|use|#|require|include)/ && t !~ /(require|import)\(/) next
      if (match(t, /"[^"]+"/)) q = substr(t, RSTART + 1, RLENGTH - 2)
      else if (match(t, sq "[^" sq "]+" sq)) q = substr(t, RSTART + 1, RLENGTH - 2)
      else if (ext ~ /^(c|h|cc|cpp|hpp)$/ && match(t, /<[^>]+>/)) q = substr(t, RSTART + 1, RLENGTH - 2)
      if (q != "") {
        if (ext == "rb" && t ~ /^require_relative/) { rel = 1; if (q !~ /^\./) q = "./" q }
        else if (q ~ /^\.\.?(\/|$)/) rel = 1
        else if (ext ~ /^(ts|tsx|js|jsx|mjs|cjs|vue|svelte)$/) {
          n = split(q, a, "/"); q = (q ~ /^[@~]/ && n > 1) ? a[1] "/" a[2] : a[1]
        } else q = trunc(q, "/")
      } else {
        w = t; sub(/^(from|import|using|use)[ \t]+/, "", w); sub(/^static[ \t]+/, "", w)
        if (w == t || w ~ /[=(]/) next
        sub(/[ \t;{,].*$/, "", w); sub(/\.\*$/, "", w); sub(/::\*?$/, "", w)
        if (w == "") next
        if (ext == "py" && w ~ /^\./) {
          d = w; sub(/[^.].*$/, "", d); m = substr(w, length(d) + 1); gsub(/\./, "/", m)
          q = (length(d) == 1) ? "./" : ""; for (j = 2; j <= length(d); j++) q = q "../"
          q = q m; rel = 1
        } else if (ext == "rs") q = trunc(w, "::")
        else if (ext == "php") q = trunc(w, "\\")
        else q = trunc(w, ".")
      }
      if (rel) {
        p = norm((fdir == "" ? "" : fdir "/") q); u = under(p)
        if (u == "" && p != rootn) { printf "%s\tout\t%s\n", src, p; next }
        if (!isdir(p)) sub(/\/?[^\/]*$/, "", u)
        tgt = modof(u); if (tgt != src) printf "%s\tin\t%s\n", src, tgt
      } else printf "%s\tpkg\t%s\n", src, q
    }' \
  | sort | uniq -c | sort -rn | head -n "$TOP"
