"""Observability: structured logs (logs.py), Metro's CloudWatch metrics (metrics.py) and their names (catalog.py),
which infra/observability.py's alarms and dashboard watch."""
