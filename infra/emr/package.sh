#!/usr/bin/env bash
# Build (and optionally upload) the EMR bundle: infra/emr/package.sh [--upload s3://code-bucket/metro/v1]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
exec "$PY" infra/emr/package.py "$@"
