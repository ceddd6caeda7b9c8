#!/usr/bin/env bash
# Copies the conformance corpus (cluster states + what upstream kube-controller-manager
# wrote for them) from the shared folder into tests/conformance/cases, so new recorded cases
# are picked up by `cargo test` and `kubectl-endpoints conformance tests/conformance/cases`.
# Usage: scripts/refresh-conformance.sh [SOURCE_DIR]   (default: ../shared/conformance)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-"$here/../shared/conformance"}
if [ ! -d "$src/cases" ]; then
  echo "refresh-conformance: no cases/ under $src" >&2
  exit 1
fi
dest="$here/tests/conformance"
mkdir -p "$dest/cases"
cp "$src/README.md" "$dest/README.md" 2>/dev/null || true
count=0
for case in "$src"/cases/*/; do
  name=$(basename "$case")
  rm -rf "$dest/cases/$name"
  mkdir -p "$dest/cases/$name"
  cp "$case"* "$dest/cases/$name/"
  count=$((count + 1))
done
echo "refresh-conformance: $count case(s) copied into $dest/cases"
