#!/usr/bin/env bash
# schema-files: files that define data and interface contracts under SRC, as "kind<TAB>path":
# migrations, SQL, ORM schema files, API specs (OpenAPI, GraphQL, protobuf, AsyncAPI, WSDL), message
# and file schemas (Avro, JSON Schema, XSD), fixtures and seeds. At most MAX paths per kind, with a
# count of the rest. Names only; reads no content. Read-only.
# Use: paste as the shell command with a first line SRC='<source dir>'; optional MAX (default 40).
set -eu
SRC="${SRC:-.}"; SRC="${SRC%/}"; MAX="${MAX:-40}"
find "$SRC" \( -name .git -o -name node_modules -o -name vendor -o -name .venv -o -name venv \
  -o -name dist -o -name build -o -name target \) -prune -o -type f -print0 \
  | while IFS= read -r -d '' f; do
      b="${f##*/}"; k=""
      case "$f" in
        */migrations/*|*/migration/*|*/db/migrate/*|*/flyway/*|*/liquibase/*|*/alembic/versions/*|*/changelog/*|*/changesets/*) k=migration ;;
      esac
      if [ -z "$k" ]; then
        case "$b" in
          V[0-9]*__*.sql|[0-9]*_*.sql|*changelog*.xml|*changelog*.y*ml|*changelog*.json) k=migration ;;
          schema.sql|*schema*.sql|*.ddl|*ddl*.sql) k=sql-schema ;;
          data.sql|*seed*|*fixture*|*.csv|*.tsv) k=seed-or-fixture ;;
          *.sql|*.pls|*.pks|*.pkb|*.prc|*.fnc|*.trg) k=sql ;;
          schema.prisma|*.prisma|models.py|*.entity.ts|*.model.ts|ormconfig.*|hibernate.cfg.xml|persistence.xml|*.hbm.xml|*DbContext.cs|*.edmx) k=orm ;;
          openapi*.y*ml|openapi*.json|swagger*.y*ml|swagger*.json|*.raml|api-docs*.json) k=http-api-spec ;;
          *.graphql|*.graphqls|*.gql) k=graphql ;;
          *.proto) k=protobuf ;;
          asyncapi*.y*ml|asyncapi*.json) k=async-api-spec ;;
          *.avsc|*.avdl|*.schema.json|*.jsonschema|*.xsd|*.dtd) k=data-schema ;;
          *.wsdl|*.thrift|*.idl) k=rpc-spec ;;
          *.http|*.rest|*.postman_collection.json|*.bru) k=api-examples ;;
          *.cpy|*.cpybook|*.copybook|*.fd) k=record-layout ;;
        esac
      fi
      if [ -n "$k" ]; then printf '%s\t%s\n' "$k" "$f"; fi
    done \
  | LC_ALL=C sort \
  | awk -F '\t' -v max="$MAX" '
      $1 != k { if (k != "" && n > max) printf "%s\t... %d more\n", k, n - max; k = $1; n = 0 }
      { n++; if (n <= max) print }
      END { if (k != "" && n > max) printf "%s\t... %d more\n", k, n - max }'
