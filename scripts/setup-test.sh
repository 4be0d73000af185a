#!/usr/bin/env bash
# What the tests need beyond scripts/setup.sh (the demos do not): the system Chromium for the
# browser tests and Playwright e2e (never a downloaded one; CHROMIUM_PATH overrides
# /usr/bin/chromium), and Debian trixie's nats-server in .servers/ for the server matrix
# (scripts/fetch-nats-server.sh; nothing is installed on the system).
set -euo pipefail
cd "$(dirname "$0")/.."

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

bash scripts/fetch-nats-server.sh >/dev/null
