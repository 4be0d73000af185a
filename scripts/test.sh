#!/usr/bin/env bash
# The one test command (README quick start, .ci/run): install, build, lint, typecheck, test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "==> typecheck tests"
npx tsc -p tsconfig.test.json
echo "==> lint (eslint + prettier)"
npx eslint .
npx prettier --check . >/dev/null || { npx prettier --check .; exit 1; }
echo "==> tests (vitest, against real nats-server processes)"
npx vitest run "$@"
echo "==> e2e (Playwright, system Chromium, built apps)" && npx playwright test -c e2e/playwright.config.ts
