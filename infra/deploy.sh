#!/usr/bin/env bash
# Deploy one Metro stage with boto3 (infra/deploy.py: no AWS CLI needed). STAGE defaults to prod.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m infra.deploy deploy --stage "${STAGE:-prod}" "$@"
