#!/usr/bin/env bash
# EMR-on-EC2 bootstrap action (every node): Python 3.11 with exactly infra/emr/requirements-emr.txt, what the
# spark_emr jobs import (the steps set spark.pyspark.python=/usr/bin/python3.11). Its argument is the code prefix
# infra/emr/package.py uploaded to, which holds requirements-emr.txt beside this script:
#   BootstrapActions: Path=s3://code-bucket/metro/<stage>/<version>/bootstrap.sh, Args=[s3://code-bucket/metro/<stage>/<version>]
set -euo pipefail
code="${1:?usage: bootstrap.sh s3://code-bucket/metro/<stage>/<version>}"
sudo dnf install -y python3.11 python3.11-pip
aws s3 cp "${code%/}/requirements-emr.txt" /tmp/metro-requirements-emr.txt
# wheels only: the node builds nothing, and gets the same files as the EMR Serverless archive's (for its arch)
sudo /usr/bin/python3.11 -m pip install --quiet --only-binary=:all: -r /tmp/metro-requirements-emr.txt
# fail the bootstrap (and so the cluster, before any step) rather than a job at import time
/usr/bin/python3.11 -c "import boto3, numpy, pyarrow.parquet, pydantic"
