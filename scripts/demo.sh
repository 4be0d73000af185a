#!/usr/bin/env bash
# The main demo: services and an admin share feature flags through a throwaway nats-server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node examples/config-service/dist/demo.js "$@"
