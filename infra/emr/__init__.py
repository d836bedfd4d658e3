"""Deploying spark_emr/ jobs to Amazon EMR: packaging, step definitions, IAM policy, nightly schedule."""
