#!/usr/bin/env bash
# The one test command (README quick start, .ci/run): install, build, lint, typecheck, test.
# The Node tests run twice, on the system's nats-server (2.9.10) and on Debian trixie's (2.10.x,
# fetched into .servers/ by scripts/setup-test.sh): vitest projects "node" and "nats-2.10".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-test.sh
echo "==> typecheck tests"
npx tsc -p tsconfig.test.json
echo "==> lint (eslint + prettier)"
npx eslint .
npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }
echo "==> tests (vitest, against real nats-server processes: 2.9.10, then 2.10)"
npx vitest run "$@"
echo "==> e2e (Playwright, system Chromium, built apps)" && npx playwright test -c e2e/playwright.config.ts
echo "==> install test (packed tarballs in scratch apps outside the workspace)" && bash scripts/install-test.sh
