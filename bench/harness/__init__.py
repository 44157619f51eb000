"""Benchmark harness: `python -m bench.harness --help`; see bench/README.md."""
