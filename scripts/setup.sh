#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh clone: npm packages (from the lockfile)
# and, when missing and we are root, nats-server and chromium from Debian's packages. Then builds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> installing npm packages (npm ci)"
  npm ci --no-audit --no-fund
fi

if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ] && [ -z "${NATS_SERVER_BIN:-}" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing nats-server from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
  else
    echo "nats-server is missing: install it (Debian: apt-get install -y nats-server) or set NATS_SERVER_BIN" >&2
    exit 1
  fi
fi

# The browser tests (vitest browser mode, Playwright e2e) drive the system Chromium, never a
# downloaded one (CHROMIUM_PATH overrides /usr/bin/chromium).
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing: install it (Debian: apt-get install -y chromium) or set CHROMIUM_PATH" >&2
    exit 1
  fi
fi

echo "==> building"
npm run --silent build
