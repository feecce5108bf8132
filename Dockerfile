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
#
# Base images are pinned by digest (the tag stays beside it for readers and for update
# tools), so a rebuild of an old commit uses the same bases. Both digests are of the
# multi-platform index. No registry was reachable where they were chosen; each was taken
# from public Dockerfiles pinning the same tag, dated in their own comments:
#   golang:1.26                            "golang:1.26 as of 2026-08-27" in a public
#                                          Dockerfile (a Powerwall Prometheus exporter)
#   gcr.io/distroless/static-debian12:nonroot
#                                          "as of 2026-08-26" in a public Dockerfile (a
#                                          bot called merlin); the same digest is pinned
#                                          by at least two other public Dockerfiles
# Check and update them where a registry answers:
#   crane digest golang:1.26
#   crane digest gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM golang:1.26@sha256:dc2521c2a906db43073b8b4d99f491b6341cf15610b6ebbab187c45153f9959e AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src

# The worker is a module of its own (examples/webhook/go.mod), built against this checkout's
# library, otelsqsworker and outbox/outboxpg modules through its replace directives (../..,
# ../../otelsqsworker and ../../outbox/outboxpg), without go.work (left out by .dockerignore; GOWORK=off says so).
ENV GOWORK=off
# Dependencies first, so source edits reuse the module download layer: the four go.mod
# files are the whole module graph.
COPY go.mod go.sum ./
COPY otelsqsworker/go.mod otelsqsworker/go.sum ./otelsqsworker/
COPY outbox/outboxpg/go.mod outbox/outboxpg/go.sum ./outbox/outboxpg/
COPY examples/webhook/go.mod examples/webhook/go.sum ./examples/webhook/
RUN --mount=type=cache,target=/go/pkg/mod cd examples/webhook && go mod download

COPY . .
WORKDIR /src/examples/webhook
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -o /webhook .

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /webhook /webhook
# 65532 is distroless' nonroot user; numeric so runtimes can verify it is not root.
USER 65532:65532
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/webhook", "healthcheck"]
ENTRYPOINT ["/webhook"]
