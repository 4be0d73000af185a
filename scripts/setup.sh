#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh clone: npm packages (from the lockfile)
# and, when missing and we are root, nats-server from Debian's packages. Then builds.
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

echo "==> building"
npm run --silent build
