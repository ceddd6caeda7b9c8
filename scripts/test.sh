#!/usr/bin/env bash
# The project's test command (the README's second set-up command, and what CI runs).
# Installs what the end-to-end tests use when it is missing, then runs every test, the image
# test last.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
cargo test --workspace --all-targets "$@"
# The image: built with buildah and run from its own root. Slow (a static build), so it is
# an ignored test of its own, run here and timed apart.
started=$(date +%s)
cargo test -p kubectl-endpoints --test it -- --ignored --nocapture image::
echo "test.sh: the image test took $(( $(date +%s) - started ))s"
