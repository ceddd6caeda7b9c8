#!/usr/bin/env bash
# Builds the kube-endpoints OCI image with buildah, FROM scratch, without a registry: the
# static lean binary (scripts/build-static.sh) as /kube-endpoints, run as 65532:65532, serving
# on 10257, the same image the Dockerfile builds for docker users.
#
#   scripts/build-image.sh [IMAGE]        (default: localhost/kube-endpoints:0.1.0)
#
# Needs buildah (Debian's works as root with the vfs storage driver). PROFILE picks the cargo
# profile of the binary (release by default; the image test uses a lighter one).
set -euo pipefail
cd "$(dirname "$0")/.."
image=${1:-localhost/kube-endpoints:$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)}
storage=${BUILDAH_STORAGE_DRIVER:-vfs}
if ! command -v buildah >/dev/null 2>&1; then
  echo "build-image: buildah is not installed (scripts/install-test-deps.sh installs it)" >&2
  exit 1
fi
binary=target/static/kube-endpoints
scripts/build-static.sh "$binary"
container=$(buildah --storage-driver "$storage" from scratch)
trap 'buildah --storage-driver "$storage" rm "$container" >/dev/null 2>&1 || true' EXIT
buildah --storage-driver "$storage" copy --chmod 0755 "$container" "$binary" /kube-endpoints >/dev/null
buildah --storage-driver "$storage" config \
  --entrypoint '["/kube-endpoints"]' \
  --cmd run \
  --user 65532:65532 \
  --port 10257/tcp \
  --label org.opencontainers.image.title=kube-endpoints \
  "$container"
buildah --storage-driver "$storage" commit --quiet "$container" "$image"
echo "build-image: built $image"
