"""Storage: SQLite (sqlite-utils) for documents, pots, checkpoints and conversations; safetensors files on disk.

Plain dicts, tensors and bytes only: nothing here imports the engine.
"""
