"""Answering from a stored pot: citations, the question-aware re-read, questions across documents."""
