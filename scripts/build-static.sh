#!/usr/bin/env bash
# Builds a statically linked kube-endpoints binary that runs on an image with no libc
# (`FROM scratch`), and copies it to ${1:-target/static/kube-endpoints}.
#
# The musl target would be the usual choice, but it needs `rustup target add`, which is not
# always possible (offline builders); glibc's static mode needs nothing beyond the host
# toolchain and glibc's static archives (libc6-dev). Our dependencies make no NSS lookups
# (no getpwnam, no getaddrinfo of names the cluster does not resolve through DNS itself),
# which is where a static glibc binary would differ from a dynamic one.
#
# Used by the Dockerfile's build stage and by hand: `scripts/build-static.sh [OUT]`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/static/kube-endpoints}
target=${TARGET:-x86_64-unknown-linux-gnu}
# The cargo profile: release (fat LTO) unless PROFILE names a lighter one.
profile=${PROFILE:-release}
# An explicit --target keeps the static flags off build scripts and proc macros, which must
# stay dynamic to be loaded by the compiler.
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
  cargo build --profile "$profile" --locked --target "$target" -p kube-endpoints
mkdir -p "$(dirname "$out")"
cp "target/$target/$profile/kube-endpoints" "$out"
if command -v ldd >/dev/null 2>&1; then
  # ldd exits non-zero on a static binary; print what it says either way.
  ldd "$out" 2>&1 | sed 's/^/ldd: /' || true
fi
if command -v file >/dev/null 2>&1; then
  file "$out"
fi
