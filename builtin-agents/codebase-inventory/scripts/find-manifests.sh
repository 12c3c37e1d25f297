#!/usr/bin/env bash
# find-manifests: build, dependency, test, CI, container and infrastructure files under SRC, one
# "kind<TAB>path" per line, sorted by kind. Names only; reads no file content. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'.
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name target -o -name dist \) -prune -o -type f -print0 \
  | while IFS= read -r -d '' f; do
      b="${f##*/}"; k=""
      case "$b" in
        package.json|package-lock.json|npm-shrinkwrap.json|yarn.lock|pnpm-lock.yaml|pnpm-workspace.yaml|bun.lock|bun.lockb|lerna.json|nx.json|turbo.json|deno.json|deno.jsonc) k=node ;;
        tsconfig*.json|babel.config.*|.babelrc|webpack.config.*|vite.config.*|rollup.config.*|esbuild.*|angular.json) k=node-build ;;
        pyproject.toml|setup.py|setup.cfg|requirements*.txt|Pipfile|Pipfile.lock|poetry.lock|uv.lock|environment.yml|conda.yaml) k=python ;;
        pom.xml|build.gradle|build.gradle.kts|settings.gradle|settings.gradle.kts|gradle.properties|build.xml|ivy.xml|build.sbt|gradle-wrapper.properties) k=jvm ;;
        go.mod|go.sum|go.work) k=go ;;
        Cargo.toml|Cargo.lock) k=rust ;;
        *.csproj|*.fsproj|*.vbproj|*.sln|packages.config|Directory.Build.props|Directory.Packages.props|global.json|nuget.config|NuGet.Config) k=dotnet ;;
        composer.json|composer.lock) k=php ;;
        Gemfile|Gemfile.lock|*.gemspec|Rakefile) k=ruby ;;
        mix.exs|rebar.config|pubspec.yaml|Package.swift|Podfile|Cartfile|*.cabal|stack.yaml|dune-project|*.nimble) k=other-lang ;;
        Makefile|makefile|GNUmakefile|CMakeLists.txt|*.cmake|meson.build|configure.ac|BUILD|BUILD.bazel|WORKSPACE|WORKSPACE.bazel|MODULE.bazel|*.mk|justfile|Taskfile.yml) k=build ;;
        Dockerfile|Dockerfile.*|*.dockerfile|docker-compose*.yml|docker-compose*.yaml|compose.yml|compose.yaml|Containerfile|Procfile|devcontainer.json) k=container ;;
        Chart.yaml|values*.yaml|kustomization.yaml|skaffold.yaml|*.tf|*.tfvars|serverless.yml|serverless.yaml|template.yaml|cdk.json|Pulumi.yaml|*.bicep|app.yaml|fly.toml|netlify.toml|vercel.json) k=infra ;;
        .gitlab-ci.yml|Jenkinsfile|azure-pipelines.yml|bitbucket-pipelines.yml|.travis.yml|cloudbuild.yaml|buildspec.yml|.drone.yml) k=ci ;;
        jest.config.*|vitest.config.*|karma.conf.*|.mocharc*|cypress.config.*|playwright.config.*|pytest.ini|tox.ini|conftest.py|phpunit.xml*|.rspec|codecov.yml|.coveragerc|jacoco*.xml|sonar-project.properties) k=test ;;
        .eslintrc*|eslint.config.*|.prettierrc*|biome.json|.flake8|ruff.toml|.pylintrc|mypy.ini|.rubocop.yml|checkstyle*.xml|pmd*.xml|spotbugs*.xml|.golangci.y*ml|.editorconfig|.pre-commit-config.yaml|.stylelintrc*) k=lint ;;
        .env|.env.*|*.env|application*.properties|application*.yml|application*.yaml|appsettings*.json|config.y*ml|settings.py|web.config|*.ini) k=config ;;
        *.proto|buf.yaml|buf.gen.yaml|openapi*.y*ml|openapi*.json|swagger*.y*ml|swagger*.json|*.graphql|*.gql|*.avsc|*.thrift|*.wsdl|*.xsd|sqlc.yaml|schema.prisma|codegen.y*ml|.openapi-generator-ignore) k=schema-or-codegen ;;
        README*|CONTRIBUTING*|ARCHITECTURE*|CHANGELOG*|*.adoc|mkdocs.yml|docusaurus.config.*) k=docs ;;
      esac
      case "$f" in */.github/workflows/*|*/.circleci/*|*/.buildkite/*) k=ci ;; esac
      if [ -n "$k" ]; then printf '%s\t%s\n' "$k" "$f"; fi
    done | sort
