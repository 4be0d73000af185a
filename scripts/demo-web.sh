#!/usr/bin/env bash
# The browser demo: a shared board (examples/collab-board) on a throwaway nats-server. Prints the
# address to open in several windows. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node examples/collab-board/dist/node/demo.js "$@"
