"""Benchmark scripts: `python -m benchmarks.run` from the repository root prints every table."""
