# syntax=docker/dockerfile:1
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
WORKDIR /src
# Dependencies first, so that a code change reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS TARGETARCH VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/recommend-job ./cmd/recommend-job

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /out/recommend-job /recommend-job
USER 65532:65532
ENTRYPOINT ["/recommend-job"]
