# syntax=docker/dockerfile:1
#
# One image with both binaries of a2a-connector:
#   /usr/local/bin/connector     gRPC server for the dialog engine   (`connector serve`, the default)
#   /usr/local/bin/console-api   console HTTP API and migrations     (`console-api serve|migrate`)
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t a2a-connector:dev .
#
# The final stage is distroless: no shell, no package manager, user 65532. The Helm chart sets
# `command` per container. scripts/image-build-check.sh (run by scripts/chart-test.sh) runs the
# build stage's `go build` line below, as written, against the files this .dockerignore lets
# into the context, and checks that the binaries are static: keep that line on one line.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# VERSION is stamped into main.version when the binary declares that variable; when it does
# not, the linker ignores -X, so the argument is harmless either way.
ARG VERSION=dev
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/connector ./cmd/console-api

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="a2a-connector" \
      org.opencontainers.image.description="Connects a voice and chat platform to tenants' A2A agents (connector gRPC server + console API)" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/connector /out/console-api /usr/local/bin/
USER 65532:65532
# gRPC (connector), HTTP (console-api), Prometheus scrape endpoint when A2AC_METRICS_ADDR is set.
EXPOSE 9090 8080 9464
ENTRYPOINT ["/usr/local/bin/connector"]
CMD ["serve"]
