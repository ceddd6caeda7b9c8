#!/usr/bin/env bash
# The project's test command (the README's second set-up command, and what CI runs).
# Installs what the end-to-end tests use when it is missing, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
cargo test --workspace --all-targets "$@"
