"""Benchmarks behind `infinipot bench`: needle-in-a-haystack accuracy and reading speed/memory per method."""
