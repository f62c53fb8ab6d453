"""Development question set: documents, questions with known answers, scoring, prompt-shape ceiling."""
