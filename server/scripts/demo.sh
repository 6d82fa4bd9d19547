#!/usr/bin/env bash
# The live demo on one machine over loopback: a generated volume streamed by
# every slabcast role (stager, one shuffler per stream, controller, receiver
# daemon) into shared memory, with each role's status line as it runs.
# Usage: demo.sh BUILD_DIR   (env: STEPS=40 DIMS=128,128,128 STREAMS=4 RATE=1G FOREVER=0)
set -euo pipefail

build=${1:-build}
slabcast="$build/server/slabcast"
datagen="$build/data/slabcast-datagen"
dims=${DIMS:-128,128,128}
streams=${STREAMS:-4}
rate=${RATE:-1G}
steps=${STEPS:-40}
nz=${dims##*,}
depth=$(( (nz + streams - 1) / streams ))

for tool in "$slabcast" "$datagen"; do
  [ -x "$tool" ] || { echo "demo: $tool is missing; run 'make build' first" >&2; exit 1; }
done
shm_free=$(df --output=avail -k /dev/shm | tail -1)
if [ "$shm_free" -lt 262144 ]; then
  echo "demo: /dev/shm has only $((shm_free / 1024)) MiB free; it needs 256 MiB (mount -o remount,size=4G /dev/shm)" >&2
  exit 1
fi

# A generated dataset is cached, not regenerated every run.
dataset="data/cache/cosmo-${dims//,/x}-20"
if [ ! -f "$dataset/dataset.json" ]; then
  echo "demo: generating 20 steps of $dims into $dataset (once)"
  "$datagen" --out "$dataset" --dims "$dims" --steps 20
fi

shm=/dev/shm/slabcast
staging=/dev/shm/slabcast-staging-demo
logs=${LOGS:-demo-logs}
mkdir -p "$logs"
base_port=${BASE_PORT:-47000}
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$staging"
  echo "demo: stopped. Last figures:"
  for f in "$logs"/receive.log "$logs"/shuffle0.log "$logs"/stage.log; do grep " info [a-z0-9 ]*: .*Gbit/s\| info stage: read" "$f" | tail -1; done
  echo "demo: logs in $logs/; slabs left in $shm for readers ('$slabcast clean --name demo' removes them)"
}
trap cleanup INT TERM EXIT

recv_args=()
for ((k = 0; k < streams; k++)); do recv_args+=(--stream "$k:$((base_port + k))"); done
"$slabcast" receive --name demo --dims "$dims" --slab-depth "$depth" --listen 127.0.0.1 \
  --shm-dir "$shm" "${recv_args[@]}" 2>"$logs/receive.log" &
pids+=($!)
"$slabcast" stage --dataset "$dataset" --staging "$staging" --streams "0-$((streams - 1))" \
  --sync "127.0.0.1:$((base_port + 200))" --loop --budget 256M 2>"$logs/stage.log" &
pids+=($!)
for ((k = 0; k < streams; k++)); do
  "$slabcast" shuffle --stream "$k" --to "127.0.0.1:$((base_port + k))" --staging "$staging" \
    --dataset "$dataset" --slab-depth "$depth" --sync "127.0.0.1:$((base_port + 100 + k))" --rate "$rate" \
    2>"$logs/shuffle$k.log" &
  pids+=($!)
done
# The receiver's once-a-second status is the demo's live view.
tail -n +1 -F "$logs/receive.log" 2>/dev/null | grep --line-buffered "receive:" &
pids+=($!)
sleep 1

count=(--count "$steps")
[ "${FOREVER:-0}" = 1 ] && count=()
echo "demo: streaming ${count[1]:-endless} steps of $dims in $streams streams at $rate each; Ctrl-C stops"
"$slabcast" control --dataset "$dataset" --shuffler "127.0.0.1:$((base_port + 100))-$((base_port + 99 + streams))" \
  --stager "127.0.0.1:$((base_port + 200))" --loop "${count[@]}" 2>"$logs/control.log"
sleep 1.2  # one more status line from every role
