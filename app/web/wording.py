"""Phrases the page shows in more than one place (the progress line and the library table, the Document selector),
kept in one place so they never contradict each other. No imports: the pure render functions and the workspace both
use them."""

# What Resume does with a cancelled or interrupted read: it continues from the last resume point.
RESUME_CONTINUES = "Resume continues from where it stopped"

# The request a summary answers, as the conversation shows and keeps it (the Chat tab's button).
SUMMARY_REQUEST = "Summarize this file"


def document_options(rows: list[dict]) -> list[tuple[str, str]]:
    """The Document selector's (label, doc_id) options for library rows: 'libtasn1.pdf (3917eb46)'."""
    return [(f"{row['name']} ({row['doc_id'][:8]})", row["doc_id"]) for row in rows]
