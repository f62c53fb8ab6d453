"""Reading a file into a stored pot: checkpoints and resume, grown logs, following a log as it grows."""

# Seconds of reading between two checkpoints: a crash loses at most this much work.
DEFAULT_CHECKPOINT_SECONDS = 60.0
