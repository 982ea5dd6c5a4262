# syntax=docker/dockerfile:1
# The image of one appmonitor function; FUNCTION picks which (a folder under functions/):
#   docker build --build-arg FUNCTION=alert-receiver -t ghcr.io/kubedemo/appmonitor-alert-receiver:latest .
#   (likewise memory-scaler, rule-sync, dead-letter; podman build takes the same arguments)
# NODE_IMAGE is any image with Node 24 and npm on PATH and a POSIX sh; `npm run image` passes one
# built from Debian packages and the npm registry's Node 24 (scripts/images/base.ts).
ARG NODE_IMAGE=node:24-bookworm-slim

# Build: every dependency from the lock file (esbuild is a dev one; no package needs its
# lifecycle scripts), then the function bundled into one ES module (scripts/bundle.ts), then
# V8's compile cache for that module, so a cold start neither resolves ~1,500 files nor
# compiles them from source.
# Behind a TLS-inspecting proxy, pass its CA bundle as a build secret and npm trusts it:
#   docker build --secret id=npm-ca,src=/path/to/ca-bundle.pem …
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm-ca \
    if [ -f /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
 && npm ci --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY scripts/bundle.ts ./scripts/
COPY schemas/ ./schemas/
COPY functions/ ./functions/
# Declared here, not above, so the dependency layer is shared by the functions' builds.
ARG FUNCTION
RUN test -n "${FUNCTION}" || { echo "build with --build-arg FUNCTION=<alert-receiver|memory-scaler|rule-sync|dead-letter>" >&2; exit 1; }
RUN node scripts/bundle.ts "${FUNCTION}" /app \
 && NODE_COMPILE_CACHE=/app/compile-cache node --input-type=module -e 'await import("/app/function.mjs")'

FROM ${NODE_IMAGE} AS runtime
ARG FUNCTION
# NODE_COMPILE_CACHE: read at start; the root file system may be read-only, and Node skips
# writing a cache it cannot write.
ENV NODE_ENV=production \
    FUNCTION=${FUNCTION} \
    NODE_COMPILE_CACHE=/app/compile-cache
WORKDIR /app
# The bundle, its entry, its licence notices and its compile cache: no node_modules, no sources.
COPY --from=build /app/ ./
# Numeric, so the kubelet can verify runAsNonRoot. The files stay root-owned: the process can
# read but not change them.
USER 1000:1000
# Knative's container contract: $PORT, 8080 unless set.
EXPOSE 8080
# Exec form: node is PID 1 and gets SIGTERM itself, to drain in-flight requests.
CMD ["node", "/app/main.mjs"]
