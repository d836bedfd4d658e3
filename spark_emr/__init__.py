"""Metro's data pipeline on Spark: compaction, retention, usage metrics and replay (see docs/pipeline.md)."""
