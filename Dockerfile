# Single-container deploy (docs/container.md). The same steps as the README's quick start (`bun install`,
# `bun start`), on the Bun release the project pins, with what the kernel's tools need at run time: bash,
# git, ca-certificates, procps, bubblewrap (the process sandbox of shell/git: ARCHITECTURE §10) and
# util-linux (prlimit). BASE is the registry's Bun image (Debian slim); test/image/imageTest.sh builds
# this file on a stand-in of it assembled from Debian packages where the registry cannot be reached.
ARG BASE=oven/bun:1.4.5-slim
FROM ${BASE}

# git pulls in perl; only git's perl-written porcelain (send-email, svn, cvs…) needs perl's module
# library, which no tool of the kernel runs (`git` allows inspection builtins only), so it is left out
# (~50 MB; /usr/bin/perl of perl-base stays). A derived image that needs the whole of perl:
# `apt-get install --reinstall libperl5.40 perl-modules-5.40` (docs/container.md).
RUN printf '%s\n' 'path-exclude=/usr/share/perl/5.*' 'path-exclude=/usr/lib/*/perl/5.*' >/etc/dpkg/dpkg.cfg.d/kintsugi-no-perl-library \
 && apt-get update \
 && apt-get install -y --no-install-recommends bash git ca-certificates procps bubblewrap util-linux \
 && rm /etc/dpkg/dpkg.cfg.d/kintsugi-no-perl-library \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json bun.lock bunfig.toml tsconfig.json ./
# The server's packages: the workspace manifest beside the kernel's (docs/dependencies.md).
COPY server/package.json ./server/
# Production dependencies only, and in the same layer out again what no running server reads: the
# install cache, the type-checking packages Bun adds as optional peers (typescript, bun-types, @types),
# source maps, Markdown, and TypeScript files (declarations, and the sources packages ship beside their
# built JavaScript: no package here resolves to a .ts file under Bun's conditions; the image test
# starts the server and runs a job on what is left).
RUN bun install --frozen-lockfile --production \
 && rm -rf /root/.bun/install/cache node_modules/typescript node_modules/bun-types node_modules/@types \
 && find node_modules -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.tsx' -o -iname '*.md' -o -name '*.tsbuildinfo' \) -delete

COPY src ./src
COPY migrations ./migrations
COPY builtin-agents ./builtin-agents
COPY builtin-skills ./builtin-skills
COPY views ./views
# The job child as a Bun bytecode bundle, built ahead (else the first start builds it in the background).
RUN bun src/worker/child/jobChildBundle.ts

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
# Readiness on the port the server listens on ($PORT, also when `-e PORT=…` moves it): 200 once the
# database is migrated and the first admin exists; 503 while starting or draining. /readyz answers any Host.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["bun", "-e", "const h = process.env.HOST; const host = !h || h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h.includes(':') ? `[${h}]` : h; fetch(`http://${host}:${process.env.PORT || 7777}/readyz`, { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains running jobs for KINTSUGI_DRAIN_SEC (30 s): run with `--stop-timeout 40` (docs/container.md).
STOPSIGNAL SIGTERM
# `bun start` without the script runner: the server is the container's process itself, gets the stop
# signal first hand, and no parent process keeps the secret variables it removes from its environment.
CMD ["bun", "src/cli.ts", "serve"]
