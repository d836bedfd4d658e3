#!/usr/bin/env bash
# EMR bootstrap action (every node): Python 3.11 with the packages the spark_emr jobs import.
#   aws emr create-cluster ... --bootstrap-actions Path=s3://code-bucket/metro/v1/bootstrap.sh
set -euo pipefail
sudo dnf install -y python3.11 python3.11-pip
sudo /usr/bin/python3.11 -m pip install --quiet "pyarrow>=14" "boto3>=1.28" "numpy>=1.22"
