#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang, ASan and UBSan in a build
# directory of their own, and runs each one for SECONDS from its seed corpus
# (testing/fuzz/corpus/<harness>, copied: the committed corpus is not changed).
# Fails on the first crash, leak, sanitizer report or timeout, and leaves the
# input that caused it in BUILD/crashes/<harness>/. Fewer executions on a slow
# machine are not a failure.
#
# --budget: the whole run's wall-clock seconds, build included (default 1100:
# ctest's fuzz test has TIMEOUT 1200). Where the build took so long that the
# harnesses left cannot each have --seconds, they share what is left; below 5 s
# each, a harness runs its seed corpus once (-runs=0). A slow machine then gets
# fewer executions, never a test killed by ctest without a word. 0: no budget.
#
#   testing/fuzz/run_fuzzers.sh [--build DIR] [--seconds 45] [--runs N] [--budget S] [harness ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build-fuzz"
seconds=45
runs=""
budget=1100
harnesses=()
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
((${#harnesses[@]})) || harnesses=(quad_store run_decode sync_decode descriptor dataset plan manifest mover_receive mover_handshake fec_groups
                                 packet_tag slab_header slab_figures step_file)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSLABCAST_BUILD_FUZZERS=ON -DSLABCAST_BUILD_PLUGIN=OFF -DSLABCAST_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${harnesses[@]}") >/dev/null
echo "fuzz build: ${SECONDS} s"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
left=${#harnesses[@]}
for h in "${harnesses[@]}"; do
  work="$build/corpus/$h"
  crashes="$build/crashes/$h"
  rm -rf "$work" && mkdir -p "$work" "$crashes"
  cp "$here/corpus/$h/"* "$work/" 2>/dev/null || true
  limit=(-max_total_time="$seconds")
  what="$seconds s"
  if [ -n "$runs" ]; then
    limit=(-runs="$runs")
    what="$runs runs"
  elif ((budget > 0)); then
    # This harness's share of what is left, less 3 s for its start and end.
    share=$(( (budget - SECONDS) / left - 3 ))
    if ((share < 5)); then
      limit=(-runs=0)
      what="its seed corpus once: ${SECONDS} s of the ${budget} s budget gone"
    elif ((share < seconds)); then
      limit=(-max_total_time="$share")
      what="$share s, not $seconds: ${SECONDS} s of the ${budget} s budget gone"
    fi
  fi
  left=$((left - 1))
  echo "fuzz_$h: $what"
  # -timeout: one input's limit, a hang. fuzz_mover_handshake waits up to 6 s by
  # design for a Hello that never comes whole: 10 s left a busy machine 4 s.
  if ! "$build/fuzz/fuzz_$h" "${limit[@]}" -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
        -print_final_stats=1 "$work" >"$build/fuzz_$h.log" 2>&1; then
    tail -40 "$build/fuzz_$h.log"
    echo "fuzz_$h FAILED: input in $crashes/" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$build/fuzz_$h.log" | tail -3
done
echo "fuzzers: all passed in ${SECONDS} s"
