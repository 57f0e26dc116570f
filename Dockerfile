# The delta container image. Two stages: the build stage compiles a static
# delta and Litestream and lays out the final file tree under /rootfs; the
# final stage is that tree on an empty base, so the image holds the two
# binaries, CA certificates, /etc/passwd and /etc/group for its one user,
# /tmp, the Litestream S3 template and nothing else (no shell, no coding
# CLI). Build:
#
#   docker build --build-arg DELTA_BUILD="$(git rev-parse HEAD)" -t delta:local .
#   podman build --build-arg DELTA_BUILD="$(git rev-parse HEAD)" -t delta:local .
#
# BUILDER is any image with a Go toolchain matching go.mod at /usr/local/go
# (or on PATH), a POSIX shell with mkdir, cp, chmod and chown, and a CA
# bundle at /etc/ssl/certs/ca-certificates.crt; test/image builds one from
# the host when no registry is reachable.
ARG BUILDER=docker.io/library/golang:1.26.8-bookworm

FROM ${BUILDER} AS build
# LITESTREAM_VERSION is the replicator the entrypoint runs.
ARG LITESTREAM_VERSION=v0.5.18
# Static binaries: modernc's SQLite is pure Go, so neither needs cgo. The
# embedded time zone database serves IANA zones on a base without one.
ENV CGO_ENABLED=0
# Litestream first: its layer does not depend on delta's source, so a
# rebuild after a source change reuses it.
RUN GOBIN=/rootfs/usr/local/bin go install -trimpath \
      -ldflags "-s -w -X main.Version=${LITESTREAM_VERSION}" \
      github.com/benbjohnson/litestream/cmd/litestream@${LITESTREAM_VERSION}
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
# DELTA_VERSION stamps the harness version /healthz reports (empty keeps the
# source's).
ARG DELTA_VERSION=
RUN go build -trimpath -tags timetzdata \
      -ldflags "-s -w ${DELTA_VERSION:+-X github.com/deltaharness/delta/internal/version.Version=$DELTA_VERSION}" \
      -o /rootfs/usr/local/bin/delta ./cmd/delta
# The runtime user is delta, 10001:10001, whose home is the /data volume;
# /tmp (for the configuration the entrypoint writes from
# LITESTREAM_REPLICA_URL) is sticky and world-writable.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/data \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\ndelta:x:10001:10001:delta:/data:/sbin/nologin\n' >/rootfs/etc/passwd \
 && printf 'root:x:0:\ndelta:x:10001:\n' >/rootfs/etc/group \
 && chmod 1777 /rootfs/tmp \
 && chown 10001:10001 /rootfs/data

FROM scratch
# DELTA_BUILD labels the build in /healthz (for example the source commit);
# it stays in the image's environment, where the daemon reads it.
ARG DELTA_BUILD=
COPY --from=build /rootfs/ /
COPY --from=build --chown=10001:10001 /rootfs/data/ /data/
# Not /etc/litestream.yml: the entrypoint turns backup on whenever that file
# exists, and this template needs the S3 variables. Name it with
# LITESTREAM_CONFIG=/etc/delta/litestream.yml, or mount your own at
# /etc/litestream.yml.
COPY etc/litestream.yml /etc/delta/litestream.yml
# In a container the daemon listens on all interfaces (it then requires
# DELTA_CONTROL_TOKEN) and keeps its state on the /data volume. These
# defaults live here only: the binary's own stay loopback and relative.
ENV PATH=/usr/local/bin \
    DELTA_BUILD=${DELTA_BUILD} \
    PORT=8080 \
    DELTA_BIND=0.0.0.0 \
    DELTA_DB=/data/delta.db \
    DELTA_WORKSPACE=/data/workspace
USER 10001:10001
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/delta", "entrypoint"]
