"""An answer's citations in the chat: a "Sources" line under every answer, and clickable options under the latest.

Plain data in, Chatbot message dicts out; no gradio and no torch. The Chatbot shows a message's `options` as
buttons under the last answer; clicking one sends its value (the cited place's first token) to
Handlers.open_source, which opens "What the model kept" there.
"""

from __future__ import annotations


def source_label(citation: dict) -> str:
    """'page 12 (41%)': the place and its share of the answer's attention."""
    return f"{citation['label']} ({100 * citation['score']:.0f}%)"


def sources_line(citations: list[dict]) -> str:
    return "Sources: " + " · ".join(source_label(c) for c in citations) if citations else ""


def chat_message(role: str, content: str, citations: list[dict] | None = None) -> dict:
    """A Chatbot message: an answer with citations gets a Sources line and one option per citation."""
    if role != "assistant" or not citations:
        return {"role": role, "content": content}
    return {
        "role": role,
        "content": f"{content}\n\n*{sources_line(citations)}*",
        "options": [{"value": str(c["token"]), "label": source_label(c)} for c in citations],
    }


def source_token(value) -> int:
    """The document token a clicked option names (ValueError for anything else)."""
    try:
        token = int(str(value).strip())
    except ValueError:
        raise ValueError(f"not a source reference: {value!r}") from None
    if token < 0:
        raise ValueError(f"not a source reference: {value!r}")
    return token
