#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang, ASan and UBSan in a build
# directory of their own, and runs each one for SECONDS from its seed corpus
# (testing/fuzz/corpus/<harness>, copied: the committed corpus is not changed).
# Fails on the first crash, leak, sanitizer report or timeout, and leaves the
# input that caused it in BUILD/crashes/<harness>/.
#
#   testing/fuzz/run_fuzzers.sh [--build DIR] [--seconds 45] [--runs N] [harness ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build-fuzz"
seconds=45
runs=""
harnesses=()
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
((${#harnesses[@]})) || harnesses=(quad_store run_decode sync_decode descriptor dataset plan manifest mover_receive mover_handshake slab_header)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSLABCAST_BUILD_FUZZERS=ON -DSLABCAST_BUILD_PLUGIN=OFF -DSLABCAST_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${harnesses[@]}") >/dev/null

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for h in "${harnesses[@]}"; do
  work="$build/corpus/$h"
  crashes="$build/crashes/$h"
  rm -rf "$work" && mkdir -p "$work" "$crashes"
  cp "$here/corpus/$h/"* "$work/" 2>/dev/null || true
  limit=(-max_total_time="$seconds")
  [ -n "$runs" ] && limit=(-runs="$runs")
  echo "fuzz_$h: ${runs:+$runs runs}${runs:-$seconds s}"
  if ! "$build/fuzz/fuzz_$h" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
        -print_final_stats=1 "$work" >"$build/fuzz_$h.log" 2>&1; then
    tail -40 "$build/fuzz_$h.log"
    echo "fuzz_$h FAILED: input in $crashes/" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$build/fuzz_$h.log" | tail -3
done
echo "fuzzers: all passed"
