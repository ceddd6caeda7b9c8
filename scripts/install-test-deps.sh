#!/usr/bin/env bash
# Installs what the end-to-end tests use when it is missing: Debian's kubectl (the embedded
# API server driven by kubectl, and the kubectl plugin), buildah (the image test), Go
# (`go tool pprof` reads the CPU profile of /debug/pprof/profile) and Prometheus (`promtool`
# checks and unit-tests deploy/monitoring/, and a real `prometheus` scrapes the controllers
# and evaluates the rules and the dashboard's queries). Best effort: a test whose tool is
# missing says so and is skipped, except under CI=true, where the tests that need them fail.
set -uo pipefail
apt_updated=
install() {
  local command=$1 package=$2
  if command -v "$command" >/dev/null 2>&1; then
    return
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps: not root or no apt-get; tests that need $command will be skipped"
    return
  fi
  if [ -z "$apt_updated" ] && ! apt-cache policy "$package" 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
    apt-get update -qq >/dev/null 2>&1 || true
    apt_updated=1
  fi
  if apt-cache policy "$package" 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null 2>&1 \
      && echo "install-test-deps: installed $package" \
      || echo "install-test-deps: could not install $package; tests that need $command will be skipped"
  else
    echo "install-test-deps: no $package package available; tests that need $command will be skipped"
  fi
}
install kubectl kubernetes-client
install buildah buildah
install go golang-go
install promtool prometheus
exit 0
