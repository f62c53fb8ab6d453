"""Benchmarks: reading speed, memory, needle-in-a-haystack. Run with `python -m benchmarks.NAME`."""
