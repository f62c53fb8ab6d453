"""What an answer says when it states nothing: words the app's page also reads (it must not import the engine)."""

NOT_ANSWERED = "No direct answer found in the document."
# What a "closest" answer says before the unit that is likely, but not surely, the answer.
SEEMS_TO_ANSWER = "The passage that seems to answer:"
