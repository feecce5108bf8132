# syntax=docker/dockerfile:1
#
# Container image of the poller: the webhook-delivery worker (./examples/webhook) as one
# static binary on distroless, running as a non-root user. ECS runs it from
# infra/terraform/modules/poller-service, whose container health check runs the same
# `/webhook healthcheck` as the HEALTHCHECK below.
#
#   docker buildx build --platform linux/arm64 -t webhook:dev .
#
# The builder runs on the build machine's platform and cross-compiles for the target
# (TARGETOS/TARGETARCH), so an arm64 image builds quickly on an amd64 machine.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src

# Dependencies first, so source edits reuse the module download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -o /webhook ./examples/webhook

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /webhook /webhook
# 65532 is distroless' nonroot user; numeric so runtimes can verify it is not root.
USER 65532:65532
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/webhook", "healthcheck"]
ENTRYPOINT ["/webhook"]
