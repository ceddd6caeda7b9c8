#!/usr/bin/env bash
# The project's test command (the README's second set-up command, and what CI runs).
# Installs what the end-to-end tests use when it is missing, then runs every test, the image
# test last.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
# Most tests wait (on a server, controllers, leases, child processes) far more than they
# compute: eight at a time keep two cores busy where one per core left them idle most of the
# time. Tests that must not share the CPU say so themselves.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-8}
# Build first, then run, so the figures say where the time goes.
started=$(date +%s)
cargo test --workspace --all-targets --no-run "$@"
echo "test.sh: building the tests took $(( $(date +%s) - started ))s"
started=$(date +%s)
cargo test --workspace --all-targets "$@"
echo "test.sh: running the tests took $(( $(date +%s) - started ))s"
# The image: built with buildah and run from its own root. Slow (a static build), so it is
# an ignored test of its own, run here and timed apart.
started=$(date +%s)
cargo test -p kubectl-endpoints --test it -- --ignored --nocapture image::
echo "test.sh: the image test took $(( $(date +%s) - started ))s"
