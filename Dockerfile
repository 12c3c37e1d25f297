# The same steps as the README's quick start: Node/npm, Bun from npm, bun install, bun start.
FROM node:20-bookworm-slim
RUN npm install -g bun@1.4.5 \
 && apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile --production
COPY src ./src
ENV HOST=0.0.0.0 PORT=7777 KINTSUGI_DATA_DIR=/data
RUN mkdir -p /data && chown node /data
VOLUME /data
EXPOSE 7777
HEALTHCHECK CMD node -e "fetch('http://127.0.0.1:7777/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
USER node
CMD ["bun", "start"]
