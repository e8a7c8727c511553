"""Benchmarks: each module measures the app against a floor it measures in the same run."""
