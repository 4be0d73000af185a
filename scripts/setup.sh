#!/usr/bin/env bash
# Installs what the demos need on a fresh clone: npm packages (from the lockfile) and, when
# missing and we are root, nats-server from Debian's packages. Then builds, unless the last build
# is newer than every source, config and the lockfile. What only the tests need (Chromium,
# Debian trixie's newer nats-server) is scripts/setup-test.sh, which scripts/test.sh runs.
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

# The stamp lives in node_modules, so a fresh `npm ci` also means a fresh build. Anything newer
# than it in the workspaces (sources, tests, configs; a deleted file touches its directory) or
# the root package files means the build is stale. Outputs and tools' scratch files do not count.
stamp=node_modules/.statesync-build-stamp
# Prints the first workspace path newer than $1 (with $2 = -type f: files only).
newer_than() {
  find package.json package-lock.json tsconfig*.json packages examples \
    \( -name node_modules -o -name dist -o -name '*.tsbuildinfo' -o -name .statesync \
    -o -name test-results -o -name playwright-report \) -prune -o ${2:-} -newer "$1" -print -quit
}
build_is_current() {
  [ -f "$stamp" ] || return 1
  [ -z "$(newer_than "$stamp")" ]
}
if [ "${STATESYNC_FORCE_BUILD:-}" != "1" ] && build_is_current; then
  echo "==> build is current (set STATESYNC_FORCE_BUILD=1 to rebuild)"
else
  echo "==> building"
  touch "$stamp.next"
  npm run --silent build
  # The stamp is the time the build started, so edits made during it count as newer; when no
  # file changed meanwhile it is the time it ended, or the directories the build's own outputs
  # touched would make the next run build again.
  [ -n "$(newer_than "$stamp.next" "-type f")" ] || touch "$stamp.next"
  mv "$stamp.next" "$stamp"
fi
