# vectorflow's image for people who build with Docker: a static binary on
# distroless/static (CA certificates, /etc/passwd, no shell), run as the
# non-root user 65532. The tests build the same shape without a daemon
# (kube/image.go).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/vectorflow ./cmd/vectorflow

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/vectorflow /usr/local/bin/vectorflow
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/vectorflow"]
