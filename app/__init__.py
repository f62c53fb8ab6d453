"""The app over the engine, by the data flow: library -> read -> ask -> service -> web, cli (bench beside web).

See docs/architecture.md for one line per module and tests/test_layering.py for the import rules.
"""
