#!/usr/bin/env bash
# bobby vs @playwright/mcp, side by side through the same official TypeScript
# MCP client (bench/bobby/compare.mjs), both over stdio, both on Debian
# chromium, on the same loopback fixture pages: tools/list bytes, snapshot
# bytes and actionable coverage, click→settled latency, session start, the
# signup form loop (observe → fill → submit, verified) and a 120-card
# catalogue snapshot. bobby also runs on Firefox ESR over WebDriver BiDi
# ([browser] engine = "firefox") as a third column when FIREFOX exists.
# Run from anywhere. Env: CHROMIUM (default /usr/bin/chromium), FIREFOX
# (default /usr/bin/firefox-esr), CLICKS
# (default 15), API_DELAY_MS (default 50), RESULT_JSON (raw figures).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || { echo "bobby.sh: node is required" >&2; exit 1; }
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export FIREFOX="${FIREFOX:-/usr/bin/firefox-esr}"
[ -x "$CHROMIUM" ] || { echo "bobby.sh: no browser at $CHROMIUM (apt-get install -y chromium)" >&2; exit 1; }
if [ ! -f test/peers/node_modules/@modelcontextprotocol/sdk/package.json ] ||
   [ ! -f test/peers/node_modules/@playwright/mcp/package.json ]; then
  # Playwright must use Debian chromium, never a downloaded browser.
  (cd test/peers && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/bobby" ./cmd/bobby
echo "@playwright/mcp $(node -p 'require("./test/peers/node_modules/@playwright/mcp/package.json").version'), $("$out/bobby" version), $("$CHROMIUM" --version 2>/dev/null || echo chromium), $("$FIREFOX" --version 2>/dev/null || echo "no firefox")"
BOBBY_BIN="$out/bobby" PEERS_DIR="$PWD/test/peers" node bench/bobby/compare.mjs
