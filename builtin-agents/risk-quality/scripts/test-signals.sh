#!/usr/bin/env bash
# test-signals: test presence per module (code files vs test files under the first DEPTH directories
# of SRC), test frameworks in use, skipped or disabled tests, and coverage configuration or reports.
# Signals only: no tests are run. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional DEPTH (default 2).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; DEPTH="${DEPTH:-2}"
code() {
  find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
    -o -name dist -o -name build -o -name target -o -name coverage \) -prune -o -type f \( -name '*.java' \
    -o -name '*.kt' -o -name '*.scala' -o -name '*.cs' -o -name '*.ts' -o -name '*.tsx' -o -name '*.js' \
    -o -name '*.jsx' -o -name '*.py' -o -name '*.go' -o -name '*.rb' -o -name '*.php' -o -name '*.rs' \
    -o -name '*.swift' -o -name '*.dart' -o -name '*.c' -o -name '*.cc' -o -name '*.cpp' \) ! -name '*.min.js' "$@"
}
TEST_RE='(^|/)(test|tests|__tests__|spec|specs|testing|e2e|it)/|\.(test|spec)\.[a-z]+$|_test\.[a-z]+$|(^|/)test_[^/]*\.py$|(Test|Tests|IT|Spec)\.(java|kt|scala|cs)$|_spec\.rb$'
tests_only() {
  code -print0 | while IFS= read -r -d '' f; do if [[ $f =~ $TEST_RE ]]; then printf '%s\0' "$f"; fi; done
}
echo "== code files, test files and ratio per module (first $DEPTH directories)"
echo "(Maven and Gradle keep tests in a parallel tree: compare src/main with src/test of one module)"
code -print | TEST_RE="$TEST_RE" awk -v root="$SRC" -v depth="$DEPTH" '
  { p = substr($0, length(root) + 2); n = split(p, a, "/"); m = ""
    for (i = 1; i < n && i <= depth; i++) m = m (m == "" ? "" : "/") a[i]
    if (m == "") m = "."
    if (p ~ ENVIRON["TEST_RE"]) { t[m]++; tt++ } else { s[m]++; ts++ }; all[m] = 1 }
  END { printf "%d\t%d\t%.2f\t(all)\n", ts, tt, (ts ? tt / ts : 0)
        for (m in all) printf "%d\t%d\t%.2f\t%s\n", s[m], t[m], (s[m] ? t[m] / s[m] : 0), m }' \
  | { IFS= read -r all || true; printf 'code\ttests\tratio\tmodule\n%s\n' "$all"
      sort -t "$(printf '\t')" -k1,1nr | head -n 40; }
echo
echo "== frameworks and helpers named in test files (matching lines)"
tests_only \
  | xargs -0 -r grep -ohE 'org\.junit(\.jupiter)?|org\.testng|mockito|assertj|pytest|unittest|jest|vitest|mocha|chai|sinon|@testing-library|cypress|playwright|rspec|minitest|"testing"|testify|xunit|nunit|MSTest|Moq|FluentAssertions|phpunit|testcontainers|wiremock|supertest' 2>/dev/null \
  | sort | uniq -c | sort -rn | head -n 20
echo
echo "== skipped or disabled tests (lines)"
tests_only \
  | xargs -0 -r grep -HnE '@Disabled|@Ignore|\[Ignore\]|\[Fact\(Skip|\.skip\(|(^|[^a-z])(xit|xdescribe|xtest)\(|@pytest\.mark\.(skip|xfail)|unittest\.skip|t\.Skip\(|pending\(|\.todo\(' 2>/dev/null \
  | cut -c1-160 | head -n 25
echo
echo "== coverage configuration and reports"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv \) -prune -o -type f \
  \( -name 'lcov.info' -o -name 'coverage*.xml' -o -name 'jacoco*.xml' -o -name 'cobertura*.xml' \
  -o -name 'coverage-final.json' -o -name 'coverage-summary.json' -o -name '.coveragerc' -o -name 'codecov.y*ml' \
  -o -name '.nycrc*' -o -name 'sonar-project.properties' \) -print | head -n 20
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv \) -prune -o -type f \
  \( -name 'package.json' -o -name 'jest.config.*' -o -name 'vitest.config.*' -o -name 'pyproject.toml' \
  -o -name 'setup.cfg' -o -name 'tox.ini' -o -name 'pom.xml' -o -name 'build.gradle*' -o -name '*.csproj' \) -print0 \
  | xargs -0 -r grep -HnE 'coverageThreshold|fail_under|--cov|jacoco|minimum|COVEREDRATIO|coverlet|"coverage"' 2>/dev/null \
  | cut -c1-160 | head -n 20
