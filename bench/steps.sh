#!/usr/bin/env bash
# Delta against the floor: a plain loop with no framework that sends the
# growing conversation to the same scripted endpoint over the same wire
# (OpenAI Chat Completions, the real client) and answers the same tool
# inline, with nothing stored; Delta does the same task durably (SQLite,
# engine, cascade, the same client). At 30, 300 and 1,000 turns it runs
# the two alternately in one process, PAIRS pairs per length (default 5),
# and prints both medians in steps/s, the median ratio delta/floor with
# its lowest and highest, and the median ratio of steps per CPU second
# (cpu-ratio), which a busy machine disturbs far less than wall time.
#   bench/steps.sh            all lengths
#   bench/steps.sh 300        one length
#   PROFILE=1 bench/steps.sh  also writes delta's CPU and allocation
#                             profiles at 300 and 1,000 turns to $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
go test -c -o "$out/perf.test" ./test/perf/
filter='FloorRatio'
if [ $# -gt 0 ]; then filter="FloorRatio/turns=$1\$"; fi
"$out/perf.test" -test.run '^$' -test.bench "$filter" -test.benchtime "${PAIRS:-5}x"
if [ -n "${PROFILE:-}" ]; then
	for n in 300 1000; do
		"$out/perf.test" -test.run '^$' -test.bench "Steps/delta/turns=$n\$" -test.benchtime 1x -test.benchmem \
			-test.cpuprofile "$out/delta-$n.cpu" -test.memprofile "$out/delta-$n.mem"
	done
	echo "profiles in $out (go tool pprof -top $out/perf.test $out/delta-300.cpu)"
fi
