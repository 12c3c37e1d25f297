# Single-container deploy. The same steps as the README's quick start (`bun install`, `bun start`),
# on the Bun release the project pins, with what the kernel's tools need at run time (bash, git, and
# bubblewrap, the process sandbox of shell/git: ARCHITECTURE §10).
FROM oven/bun:1.4.5-debian

RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates procps bubblewrap \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile --production

COPY src ./src
COPY migrations ./migrations
COPY builtin-agents ./builtin-agents
COPY builtin-skills ./builtin-skills
COPY views ./views
# The job child as a Bun bytecode bundle, built ahead (else the first start builds it in the background).
RUN bun src/worker/jobChildBundle.ts

# The embedded database, the generated secret key and job scratch live in the data volume.
# Bun's transpiler cache in the volume too: a new container does not re-transpile the server each start.
ENV HOST=0.0.0.0 PORT=7777 KINTSUGI_DATA_DIR=/data NODE_ENV=production BUN_RUNTIME_TRANSPILER_CACHE_PATH=/data/cache/transpiler
RUN mkdir -p /data && chown bun:bun /data
VOLUME /data
USER bun
# The embedded database's data-dir template (initdb + every migration, once): a new /data volume starts
# as a copy of it instead of running initdb (README: KINTSUGI_DB_TEMPLATES).
RUN bun -e "await (await import('/app/src/db/Db.ts')).buildDataDirTemplate()"
EXPOSE 7777
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD bun -e "fetch('http://127.0.0.1:7777/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["bun", "start"]
