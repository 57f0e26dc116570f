#!/usr/bin/env bash
# 256 sessions at the provider's pace: 256 concurrent runs of 21 model calls
# each against a scripted endpoint that takes 200 ms a call (served by a
# child process, so every figure is Delta's own), through the whole durable
# path. Prints calls/s and the fraction of the ideal 1,280 calls/s, and per
# active run above the idle process (sampled once every session has
# checkpointed its tenth call): live heap, goroutine stacks, VmRSS and
# goroutines. The machine's load average is printed beside it, since
# throughput on a shared machine depends on it.
#   bench/concurrent.sh                 one run
#   COUNT=3 bench/concurrent.sh         three
#   PEAKHEAP=/tmp/peak.heap bench/...   also a heap profile at the sample
#                                       (go tool pprof -top perf.test FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
go test -c -o "$out/perf.test" ./test/perf/
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
args=(-test.run '^$' -test.bench 'Concurrent' -test.benchtime 1x -test.count "${COUNT:-1}")
if [ -n "${PEAKHEAP:-}" ]; then args+=(-perf.peakheap "$PEAKHEAP"); fi
"$out/perf.test" "${args[@]}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
