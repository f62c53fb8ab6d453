"""A walk through the web app as a new user meets it, screen by screen, with named screenshots: `python -m
benchmarks.app_walk --help`."""
