"""``metro``: a command line for a running Metro, over its REST API (docs/cli.md)."""
