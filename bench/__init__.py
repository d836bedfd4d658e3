"""Metro's benchmark and cost model (``python -m bench.run``; see docs/decisions/cost-model.md)."""
