#!/usr/bin/env bash
# Rewrites crates/cli/hot-text.ld: the list of functions `kube-endpoints run` executes, which
# the linker places together (crates/cli/build.rs passes it on).
#
# Why: the kernel maps a binary's code around each page it faults in (64 KiB at a time), and
# the functions a controller runs are scattered over the whole 22 MiB of text, which also holds
# the embedded API server, plan, bench and the rest. Spread out like that, about 3.5 MiB of
# executed code kept about 11.5 MiB of text resident. Placed together, it costs what it is.
#
# How: a release build of this checkout runs `bench` (cold, create and flap on a small
# workload) with the controller as its own process under callgrind, which names every
# function that ran; scripts/hot_text.py turns the names into section patterns that survive
# rebuilds (hashes are left out). Run it again when `run`'s code paths change a lot: a
# function missing from the list is only placed elsewhere, never lost.
#
# Needs valgrind (installed with apt-get when missing and possible). Takes a few minutes.
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
cargo build --release --locked -p kube-endpoints
bin=$(pwd)/target/release/kube-endpoints
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
  "$bin" bench --scenario "$scenario" --services 20 --pods-per-service 50 \
    --controller process --controller-program "$work/controller" \
    --controller-arg="--secure-port=$port" --qps 1000 --concurrency 8 -q -o json \
    >"$work/$scenario.json"
  pid=$(cat "$work/pid")
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
done
python3 scripts/hot_text.py "$bin" crates/cli/hot-text.ld "$work"/profile.*
