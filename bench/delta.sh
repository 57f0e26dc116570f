#!/usr/bin/env bash
# Delta's figures: durable step throughput, steps/s against the floor at 30,
# 300 and 1,000 turns (bench/steps.sh), event append and page throughput,
# daemon start to healthy, restart with 256 runs in flight, RSS per idle
# session, recall p95 over a 5,000-row session among 50,000 other rows, and the
# stripped binary size. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
go build -trimpath -ldflags "-s -w" -o "$out/delta" ./cmd/delta
echo "stripped binary: $(du -k "$out/delta" | cut -f1) KiB"
go test -run '^$' -bench 'DurableStep' -benchtime 50x ./internal/engine/
PAIRS=3 bench/steps.sh
go test -run '^$' -bench 'EventAppend|EventPage' ./internal/store/
go test -run '^$' -bench 'Recall' -benchtime 770x ./internal/tool/recall/
go test -run '^$' -bench 'TaskEventsPage' -benchtime 200x ./internal/api/
go test -run '^$' -bench 'StartToHealthy' -benchtime 20x ./test/e2e/
go test -run '^$' -bench 'IdleSessionRSS' -benchtime 200x ./test/e2e/
go test -run '^$' -bench 'RestartResume256' -benchtime 5x ./test/crash/
rm -rf "$out"
