"""What an answer says when it states nothing: words the app's page also reads (it must not import the engine)."""

NOT_ANSWERED = "No direct answer found in the document."
# What a "closest" answer says before the unit that is likely, but not surely, the answer.
SEEMS_TO_ANSWER = "The passage that seems to answer:"
# Said after an answer the model wrote when it is a base model (no chat template): such a model continues text
# rather than following the request, so what it writes reads poorly (docs/benchmarks.md, Gemma 3 270M).
BASE_MODEL_WROTE = (
    "(Written by a base model, not one tuned to follow instructions: it may ramble. The checked answer, the "
    "default, quotes the document's own sentence instead.)"
)
