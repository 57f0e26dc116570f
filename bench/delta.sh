#!/usr/bin/env bash
# Delta's figures: durable step throughput, daemon start to healthy, RSS per
# idle session, and the stripped binary size. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
go build -trimpath -ldflags "-s -w" -o "$out/delta" ./cmd/delta
echo "stripped binary: $(du -k "$out/delta" | cut -f1) KiB"
go test -run '^$' -bench 'DurableStep' -benchtime 50x ./internal/engine/
go test -run '^$' -bench 'StartToHealthy' -benchtime 20x ./test/e2e/
go test -run '^$' -bench 'IdleSessionRSS' -benchtime 200x ./test/e2e/
rm -rf "$out"
