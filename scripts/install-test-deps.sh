#!/usr/bin/env bash
# Installs Debian's kubectl for the end-to-end tests that drive the embedded API server with
# it. Best effort: without it those tests print that they were skipped.
set -uo pipefail
if command -v kubectl >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  if ! apt-cache policy kubernetes-client 2>/dev/null | grep -q Candidate; then
    apt-get update -qq >/dev/null 2>&1 || true
  fi
  if apt-cache policy kubernetes-client 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null 2>&1 \
      && echo "install-test-deps: installed kubectl ($(kubectl version --client 2>/dev/null | head -1))" \
      || echo "install-test-deps: could not install kubernetes-client; kubectl tests will be skipped"
  else
    echo "install-test-deps: no kubectl package available; kubectl tests will be skipped"
  fi
else
  echo "install-test-deps: not root or no apt-get; kubectl tests will be skipped"
fi
exit 0
