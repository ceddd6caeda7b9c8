#!/usr/bin/env bash
# Rewrites crates/kube-endpoints/hot-text.ld: the list of functions `kube-endpoints run`
# executes, which the linker places together (crates/kube-endpoints/build.rs passes it on).
#
# Why: the kernel maps a binary's code around each page it faults in (64 KiB at a time), and
# the functions a controller runs are scattered over the binary's 11 MiB of text, among the
# client's, TLS's, clap's and the standard library's code it never calls. Spread out like that,
# a controller that executes a few MiB of code keeps nearly all the text resident (8.6 MiB of
# file pages idle, static release build). Placed together, it costs about what it runs.
#
# How: the static release build (scripts/build-static.sh, what the image ships) runs under
# callgrind as the controller of `kubectl-endpoints bench` (cold, create and flap on a small
# workload, with and without leader election), which names every function that ran;
# scripts/hot_text.py turns the names into section patterns that survive rebuilds (hashes are
# left out). Run it again when `run`'s code paths change a lot: a function missing from the
# list is only placed elsewhere, never lost.
#
#   scripts/hot-text.sh     (KUBE_ENDPOINTS_BIN=path profiles that build instead of making one)
#
# Needs valgrind (installed with apt-get when missing and possible). Takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
  else
    echo "hot-text: needs valgrind (apt-get install valgrind)" >&2
    exit 1
  fi
fi
if [ -n "${KUBE_ENDPOINTS_BIN:-}" ]; then
  bin=$(realpath "$KUBE_ENDPOINTS_BIN")
else
  # Without the current script, so that the profile names the functions as a plain link does.
  KUBE_ENDPOINTS_HOT_TEXT=0 scripts/build-static.sh target/static/kube-endpoints-plain
  bin=$(pwd)/target/static/kube-endpoints-plain
fi
# The load generator and embedded API server (a debug build would do, but is slow to drive);
# KUBE_ENDPOINTS_DRIVER=path uses a kubectl-endpoints already built.
if [ -n "${KUBE_ENDPOINTS_DRIVER:-}" ]; then
  driver=$(realpath "$KUBE_ENDPOINTS_DRIVER")
else
  cargo build --profile image-test --locked -p kubectl-endpoints
  driver=$(pwd)/target/image-test/kubectl-endpoints
fi
work=$(mktemp -d)
trap '[ -n "${HOT_TEXT_KEEP:-}" ] || rm -rf "$work"' EXIT

# The bench starts the controller with leader election off and stops it with SIGKILL, which
# callgrind cannot survive to write its profile. The wrapper sets leader election as $LEADER
# says (deployments run with it on), starts valgrind in the background and records its pid,
# so that it outlives the wrapper and can be stopped with SIGTERM, which `run` handles.
cat >"$work/controller" <<EOF
#!/usr/bin/env bash
args=()
for a in "\$@"; do
  [ "\$a" = --leader-elect=false ] && a=--leader-elect=\$LEADER
  args+=("\$a")
done
valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \\
  --callgrind-out-file="$work/profile.%p" "$bin" "\${args[@]}" 2>>"$work/valgrind.log" &
echo \$! >"$work/pid"
wait
EOF
chmod +x "$work/controller"

for run in cold:true cold:false create:false flap:true; do
  scenario=${run%:*}
  export LEADER=${run#*:}
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "hot-text: profiling bench --scenario $scenario (leader election: $LEADER)" >&2
  "$driver" bench --scenario "$scenario" --services 20 --pods-per-service 50 \
    --controller process --controller-program "$work/controller" \
    --controller-arg="--secure-port=$port" --qps 1000 --concurrency 8 -q -o json \
    >"$work/$scenario.json"
  pid=$(cat "$work/pid")
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
done
python3 scripts/hot_text.py "$bin" crates/kube-endpoints/hot-text.ld "$work"/profile.*
