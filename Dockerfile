# syntax=docker/dockerfile:1
# The image of one appmonitor function; FUNCTION picks which (a folder under functions/):
#   docker build --build-arg FUNCTION=alert-receiver -t ghcr.io/kubedemo/appmonitor-alert-receiver:latest .
#   (likewise memory-scaler, rule-sync)
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step:
# the image holds the sources, package metadata and the production dependencies only.
ARG NODE_IMAGE=node:24-bookworm-slim

# Production dependencies, installed from the lock file; no lifecycle scripts are needed by any
# of them (the only package with one is the dev-only `node`).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ARG FUNCTION
RUN test -n "${FUNCTION}" || { echo "build with --build-arg FUNCTION=<alert-receiver|memory-scaler|rule-sync>" >&2; exit 1; }
ENV NODE_ENV=production \
    FUNCTION=${FUNCTION}
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY schemas/ ./schemas/
COPY functions/ ./functions/
RUN test -f "functions/${FUNCTION}/index.ts" || { echo "no function ${FUNCTION}: functions/${FUNCTION}/index.ts does not exist" >&2; exit 1; }
# Numeric, so the kubelet can verify runAsNonRoot (uid 1000 is the image's `node` user). The
# files stay root-owned: the process can read but not change them.
USER 1000:1000
# Knative's container contract: $PORT, 8080 unless set.
EXPOSE 8080
# exec: node is PID 1 and gets SIGTERM itself, to drain in-flight requests.
CMD ["sh", "-c", "exec node functions/run.ts \"$FUNCTION\""]
