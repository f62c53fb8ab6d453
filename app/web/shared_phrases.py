"""Phrases the page shows in more than one place (the progress line and the library table, the Document selector),
kept in one place so they never contradict each other. No imports: the pure render functions and the workspace both
use them."""

# What Resume does with a cancelled or interrupted read: it continues from the last resume point.
RESUME_CONTINUES = "Resume continues from where it stopped"

# The request a summary answers, as the conversation shows and keeps it (the Chat tab's button).
SUMMARY_REQUEST = "Summarize this file"


# The Document selector's value that asks every ready document at once (a doc_id is 16 hex digits: never this).
ALL_DOCUMENTS = "all-documents"


def all_documents_label(ready: int) -> str:
    return f"All documents ({ready} ready)"


def document_options(rows: list[dict]) -> list[tuple[str, str]]:
    """The Document selector's (label, doc_id) options for library rows: the name, with the start of its id only
    when two documents share it ('notes.txt (3917eb46)'); first, with two or more documents ready, 'All documents
    (N ready)', which asks them all at once."""
    names = [row["name"] for row in rows]
    options = [
        (row["name"] if names.count(row["name"]) == 1 else f"{row['name']} ({row['doc_id'][:8]})", row["doc_id"])
        for row in rows
    ]
    ready = sum(1 for row in rows if row.get("ready"))
    return [(all_documents_label(ready), ALL_DOCUMENTS), *options] if ready >= 2 else options
