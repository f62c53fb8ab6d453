"""The visualization's pure functions on a hand-made pot, and the HTML they become."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
import torch
from tiny_models import tiny_tokenizer

from infinipot.app.web import kept_view as visualize
from infinipot.app.web.page import render
from infinipot.core.pot import Pot
from infinipot.core.selection import KEPT_NOVELTY, KEPT_READ, KEPT_SCORE, KEPT_SINK


def hand_made_pot() -> Pot:
    """2 layers x 2 KV heads x 5 entries; a 2-token template opening, then document tokens 0..19."""
    origin = torch.tensor(
        [
            [[0, 1, 3, 7, 20], [0, 1, 2, 9, 21]],  # layer 0: document tokens 1, 5, 18 / 0, 7, 19
            [[0, 1, 4, 7, 8], [0, 1, 7, 12, 21]],  # layer 1: 2, 5, 6 / 5, 10, 19
        ]
    )
    s, n, c, r = KEPT_SINK, KEPT_NOVELTY, KEPT_SCORE, KEPT_READ
    kept_by = torch.tensor([[[s, s, n, c, r], [s, s, c, n, r]], [[s, s, n, n, c], [s, s, c, c, r]]], dtype=torch.uint8)
    zeros = torch.zeros(2, 2, 5)
    keys = [torch.zeros(1, 2, 5, 4) for _ in range(2)]
    return Pot(
        keys=keys,
        values=[k.clone() for k in keys],
        origin=origin,
        kept_by=kept_by,
        novelty=zeros,
        positions=origin.clone(),
        next_position=22,
        prefix_len=2,
        tokens_read=22,
        cycles=3,
        peak_entries=8,
        last_logprobs=None,
    )


def test_window_states_say_why_each_token_of_one_head_is_there():
    pot = hand_made_pot()
    states = visualize.window_states(pot, layer=0, head=0, start=0, end=8)
    assert states == ["dropped", "nuc", "dropped", "dropped", "dropped", "cap", "dropped", "dropped"]
    assert visualize.window_states(pot, 0, 1, 15, 20) == ["dropped"] * 4 + ["read"]
    assert visualize.kept_counts(pot, 1, 0) == {"sink": 2, "nuc": 2, "cap": 1, "read": 0, "recent": 0}


def test_head_counts_for_one_layer_and_for_all_layers():
    pot = hand_made_pot()
    counts, heads = visualize.window_head_counts(pot, 4, 8, layer=1)
    assert (counts, heads) == ([0, 2, 1, 0], 2)  # token 5 kept by both heads of layer 1, token 6 by one
    counts, heads = visualize.window_head_counts(pot, 4, 8)
    assert (counts, heads) == ([0, 3, 1, 1], 4)


def test_retention_map_is_the_share_of_each_bin_kept_per_layer():
    pot = hand_made_pot()
    data = visualize.retention_map(pot, total_tokens=20, bins=4)
    assert data["edges"] == [0, 5, 10, 15, 20] and data["x"] == "position"
    # layer 0 keeps document tokens 1, 5, 18 (head 0) and 0, 7, 19 (head 1): 2, 2, 0, 2 of 5 x 2 slots
    assert data["matrix"][0] == [0.2, 0.2, 0.0, 0.2]
    by_page = visualize.retention_map(pot, total_tokens=20, starts=[0, 10])
    assert by_page["labels"] == ["page 1", "page 2"]
    assert by_page["matrix"][1] == [4 / 20, 2 / 20]  # layer 1: 2, 5, 6, 5 on page 1; 10, 19 on page 2


def test_layer_and_head_are_checked():
    pot = hand_made_pot()
    for layer, head in ((2, 0), (0, 2), (-1, 0)):
        try:
            visualize.window_states(pot, layer, head, 0, 5)
        except ValueError as exc:
            assert "between 0 and 1" in str(exc)
        else:
            raise AssertionError("an impossible layer or head was accepted")


class PagedMap:
    def __init__(self, pages: list[int]) -> None:
        self.pages = pages

    def page_of(self, token: int) -> int:
        return self.pages[token]


def test_page_starts_find_the_first_token_of_every_page():
    pages = [1, 1, 1, 2, 2, 4, 4, 4]  # page 3 is empty
    assert visualize.page_starts(PagedMap(pages), len(pages), 4) == [0, 3, 5, 5]


def test_token_pieces_keep_split_characters_whole():
    tokenizer = tiny_tokenizer()
    text = "fox é 12345"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    pieces = visualize.token_pieces(tokenizer, ids)
    assert len(pieces) == len(ids) and "".join(pieces) == text
    assert "" in pieces  # 'é' is two byte tokens: the first carries the character


def test_memory_rows_compare_the_pot_with_a_full_cache_and_track_the_process():
    sample = {"tokens": 10, "entries": 5, "pot_bytes": 2**20, "full_kv_bytes": 2**21, "rss_bytes": 2**22}
    rows = visualize.memory_rows([sample])
    assert [(r["series"], r["MB"]) for r in rows["kv"]] == [("pot", 1.0), ("full KV cache", 2.0)]
    assert rows["process"] == [{"tokens": 10, "MB": 4.0}]


def test_tokens_html_escapes_text_and_marks_each_token():
    window = {
        "start": 0,
        "mode": "one head",
        "tokens": [
            {"text": "<script>", "state": "cap"},
            {"text": "$x`", "state": "dropped"},
            {"text": "", "state": "nuc"},
        ],
    }
    html = render.tokens_html(window)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&#36;x&#96;" in html
    assert html.count('class="ip-tok ip-cap"') == 1 and html.count("ip-tok") == 2
    window = {
        "start": 5,
        "mode": "all heads",
        "heads_counted": 4,
        "tokens": [{"text": "a", "count": 4}, {"text": "b", "count": 1}],
    }
    html = render.tokens_html(window)
    assert "ip-h10" in html and "ip-h2" in html and "token 6: kept by 1 of 4 heads" in html


def test_progress_text_shows_tokens_cycles_rate_and_eta():
    snapshot = {
        "name": "book.pdf",
        "status": "reading",
        "tokens_read": 1500,
        "tokens_total": 6000,
        "fraction": 0.25,
        "cycles": 3,
        "entries": 2100,
        "pot_size": 4096,
        "tokens_per_second": 300.0,
        "eta_seconds": 15.0,
        "tokens_counted": 6000,
        "elapsed_seconds": 5.0,
    }
    text = render.progress_text(snapshot)
    assert text == (
        "book.pdf: reading · 1,500 / 6,000 tokens (25%) · memory 2,100 / 4,096, compressed 3 times · "
        "300 tokens/s · ETA 15 s"
    )
    assert 'value="250"' in render.progress_html(snapshot)
    assert render.progress_text({**snapshot, "status": "failed", "error": "bad file"}) == "book.pdf: failed: bad file"
    note = "copy.pdf has the same content as book.pdf"
    duplicate = {**snapshot, "status": "done", "reused": True, "warnings": [note]}
    assert render.progress_text(duplicate).endswith(f"read before, reused · {note}")
    assert "tokens/s" not in render.progress_text(duplicate)  # nothing was read now: no reading rate
    # Before the read's first steps, no ETA is guessed from the model's loading and the empty pot's first fill.
    assert render.progress_text({**snapshot, "eta_seconds": None}).endswith("ETA after the first steps")
    # What Resume does is said one way in the progress line and in the library table.
    cancelled = render.progress_text({**snapshot, "status": "cancelled"})
    assert cancelled.endswith("Resume continues from where it stopped") and "reads it again" not in cancelled
    assert render.progress_text({**snapshot, "status": "interrupted"}) == (
        "book.pdf: interrupted · Resume continues from where it stopped"
    )
    from infinipot.app.web.workspace import _job_status

    table = _job_status({"status": "cancelled", "fraction": 0.25})
    assert table == "cancelled at 25% (Resume continues from where it stopped)"


# The paper's words, which the kept view keeps for its "In the paper's terms" fold (issue 66).
PAPER_WORDS = re.compile(
    r"\b(?:CaP|NuC|KV|RSS|(?i:pots?|sinks?|catalyst|novelty|uncompressed|tail|attention views?|chat template))\b"
)


def shown(html: str) -> str:
    """The text of an HTML fragment, without its tags (whose class names, ip-cap, are not words on the page)."""
    return re.sub(r"<[^>]+>", " ", html)


def test_the_legend_says_in_plain_words_that_only_coloured_text_is_remembered():
    legend = render.legend_html("one head")
    assert "The model remembers only the coloured text" in legend
    assert "surprising to the model" in legend and "important to a summary of the text" in legend
    assert not PAPER_WORDS.search(shown(legend))  # the paper's terms are in the fold, not in small print here
    assert not PAPER_WORDS.search(" ".join(render.STATE_LABELS.values()))  # nor in the tokens' hover text
    whole = render.legend_html("one head", whole=True)  # nothing forgotten: no grey in the legend
    assert "remembers all of this text" in whole and "forgotten" not in whole
    assert "underlined" in render.legend_html("one head", quoted=True) and "underlined" not in legend


def one_head_window(states: list[str], start: int = 100, **changes) -> dict:
    texts = [" The", " licence", " is", " GP", "L", "-", "3", "."] * 4
    tokens = [{"text": texts[i % len(texts)], "state": state} for i, state in enumerate(states)]
    window = {
        "start": start,
        "end": start + len(tokens),
        "total": 2_425,
        "layer": 3,
        "layers": 30,
        "head": 1,
        "kv_heads": 3,
        "mode": "one head",
        "entries": 4_096,
        "kept": {"sink": 24, "nuc": 1_000, "cap": 2_000, "read": 1_072, "recent": 0},
        "whole": False,
        "tokens": tokens,
    }
    return {**window, **changes}


def test_the_caption_counts_what_the_group_remembers_and_never_a_zero_or_the_template():
    caption = render.window_caption(one_head_window(["cap"] * 8))
    assert "layer 3 of 30, group 1 of 3" in caption
    held = 4_096 - 24
    assert f"remembers {held:,} tokens of the document" in caption
    assert "2,000 important to a summary, 1,000 surprising, 1,072 read after" in caption
    assert " 0 " not in caption and not PAPER_WORDS.search(caption)
    # A document that fits in the memory: the whole of it, never more tokens than it has.
    short = one_head_window(["read"] * 8, whole=True, entries=2_449, kept={"sink": 24, "read": 2_425})
    caption = render.window_caption(short)
    assert "it remembers the whole document (2,425 tokens)" in caption and "2,449" not in caption


def test_the_quoted_sentence_says_whether_the_model_still_holds_its_words():
    states = ["dropped"] * 4 + ["cap"] * 4 + ["dropped"] * 8  # 2 words shown ... 4 words whose tokens split
    window = one_head_window(states)
    first, end = window["start"], window["end"]
    words = len([t for t in window["tokens"] if t["text"].startswith(" ")])  # 8 of the 16 pieces start a word
    held = render._quote_words(window, [first, end])
    assert len(held) == words
    note = render.quote_note(window, [first, end])
    assert f"still holds {sum(held)} of these {words} words" in note and 0 < sum(held) < words
    assert "document's text" in note  # where the quote came from, since the model forgot some of it
    assert "no longer holds these words" in render.quote_note(one_head_window(["dropped"] * 16), [first, end])
    kept = render.quote_note(one_head_window(["nuc"] * 16), [first, end])
    assert f"still holds all {words} of its words" in kept and "document's text" not in kept
    assert render.quote_note(window, [end + 5, end + 9]) == ""  # the quote is not in this window
    assert render.quote_note(window, None) == ""
    # The caption carries the note; all groups: a word counts as held when any of the layer's groups holds it.
    assert "still holds" in render.window_caption(window, [first, end])
    tokens = [{"text": t["text"], "count": 0 if t["state"] == "dropped" else 2} for t in window["tokens"]]
    groups = {**window, "head": None, "mode": "all heads", "heads_counted": 3, "tokens": tokens}
    assert "any of its groups" in render.quote_note(groups, [first, end])
    assert render._quote_words(groups, [first, end]) == held


def memory_samples(rss_mb: list[float], step: int = 1_024) -> list[dict]:
    return [
        {"tokens": step * i, "entries": 0, "pot_bytes": 0, "full_kv_bytes": 0, "rss_bytes": int(mb * 2**20)}
        for i, mb in enumerate(rss_mb)
    ]


def kept_summary(**changes) -> dict:
    summary = {
        "name": "GPL-3.txt",
        "total": 100_000,
        "held": 4_072,
        "whole": False,
        "entries": 4_096,
        "sinks": 24,
        "pot_size": 4_096,
        "keep_size": 2_048,
        "cap_mode": "general",
        "cycles": 47,
        "layers": 30,
        "kv_heads": 3,
        "bytes": 96 * 2**20,
        "full_bytes": 2_344 * 2**20,
    }
    return {**summary, **changes}


def test_the_kept_view_opens_with_what_the_model_remembers_in_plain_words():
    flat = memory_samples([1_300, 1_410, 1_420, 1_425, 1_425, *[1_430] * 95])
    html = unescape(render.kept_summary_html(kept_summary(), {"samples": flat}))
    assert "remembers 4,072 of them" in html and "100,000 tokens" in html
    assert "96.0 MB instead of 2.3 GB" in html and "4,072 of 100,000 tokens, 4% of what keeping everything" in html
    assert "stayed flat once the model's memory was full: between 1,425 MB and 1,430 MB from token 4,096" in html
    assert not PAPER_WORDS.search(shown(html))
    nearly = memory_samples([969, 1_050, 1_100, 1_140, 1_143, 1_170, 1_203])  # 5% between tokens 4,096 and 6,144
    assert "stayed nearly flat once the model's memory was full: between 1,143 MB and 1,203 MB" in unescape(
        render.kept_summary_html(kept_summary(), {"samples": nearly})
    )
    # The memory grew: said as it was, never "flat".
    grew = render.kept_summary_html(kept_summary(), {"samples": memory_samples([1_000, 1_500, 2_000, 2_500, 3_000])})
    assert "flat" not in grew and "went from 1,000 MB to 3,000 MB" in grew
    # A document that fits: the whole of it, nothing forgotten, no saving claimed.
    short = kept_summary(total=2_425, held=2_425, whole=True, entries=2_449, cycles=0)
    html = render.kept_summary_html(short, {"samples": memory_samples([1_327, 1_411, 1_433])})
    assert "remembers the whole of GPL-3.txt: all 2,425 tokens" in html and "nothing was forgotten" in html
    assert "2,449" not in html and "went from 1,327 MB to 1,433 MB" in html
    assert "no record of the app's memory" in unescape(render.kept_summary_html(short, {"samples": []}))


def test_the_paper_terms_fold_names_what_the_plain_words_mean():
    terms = render.paper_terms_md(kept_summary(), one_head_window(["cap"]))
    for term in ("pot", "|M| = 4,096", "|C| = 2,048", "KV head", "CaP", "NuC", "uncompressed tail", "RSS"):
        assert term in terms, term
    assert "full KV cache" in terms and "chat template" in terms and "CaP-G" in terms
    assert "Layer 3, KV head 1** holds, by reason: 24 attention sinks, 1,000 by NuC, 2,000 by CaP" in terms
    assert "0 in the sliding window" not in terms  # no zero counts
    fits = render.paper_terms_md(kept_summary(total=2_425, held=2_425, whole=True, entries=2_449, cycles=0))
    assert "never for this document, which fits in the pot" in fits and "2,425 document tokens and 24" in fits
    assert not re.search(r"\b0 ", fits)


def test_a_local_layer_is_named_in_the_caption_and_its_latest_text_in_the_legend():
    window = {
        "start": 0,
        "end": 40,
        "total": 900,
        "layer": 0,
        "layers": 18,
        "head": 0,
        "mode": "one head",
        "entries": 96,
        "kept": {"sink": 2, "nuc": 0, "cap": 0, "read": 40, "recent": 54},
        "local_window": 512,
    }
    caption = render.window_caption({**window, "kv_heads": 1})
    assert "a local layer: it sees only the latest 512 tokens" in caption and "54 of the latest text" in caption
    assert "the latest text, all that a local layer sees" in render.legend_html("one head", local=True)
    global_layer = {**window, "local_window": None, "kept": {**window["kept"], "recent": 0}}
    assert "local" not in render.window_caption({**global_layer, "kv_heads": 1}) + render.legend_html("one head")


def test_the_all_heads_legend_has_one_step_per_possible_share():
    three = render.legend_html("all heads", heads=3)
    assert [f"{p}%" in three for p in (0, 33, 67, 100)] == [True] * 4
    assert "20%" not in three and "40%" not in three
    assert "ip-h3" in three and "ip-h7" in three  # 1 and 2 of 3 heads: the shades tokens_html gives them
    assert render.head_shade(1, 3) == 3 and render.head_shade(2, 3) == 7


def test_the_retention_map_has_axis_ticks_and_a_colour_scale():
    data = {"matrix": [[0.0, 0.1, 0.69]] * 12, "labels": ["0", "100", "200"], "x": "position"}
    html = render.retention_html(data)
    ticks = re.findall(r'<span class="(ip-\w+)" style="left: ([\d.]+)%">([^<]*)</span>', html)
    # under each column's middle; the first and last held inside the map's edges (the last ran past it)
    assert ticks == [("ip-first", "16.67", "0"), ("ip-mid", "50.00", "100"), ("ip-last", "83.33", "200")]
    assert "layer (0 at the top to 11)" in html
    layers = re.findall(r'<th class="ip-layer">(\d*)</th>', html)
    assert [label for label in layers if label] == ["0", "5", "10", "11"]
    assert "share of the tokens the layer still holds: 0%" in html and "69.0% (the highest in this map)" in html
    assert "position in the document (tokens)" in html


def test_memory_plots_start_their_y_axis_at_zero():
    from infinipot.app.web.page.handlers import KEEP_ALL_SERIES, MEMORY_SERIES, _memory_frames

    kv, process = _memory_frames(
        {"kv": [[0, "pot", 1.0], [100, "full KV cache", 4.0]], "process": [[0, 1856.0], [100, 1866.0]]}
    )
    assert kv["y_lim"] == [0, pytest.approx(4.4)] and process["y_lim"] == [0, pytest.approx(2052.6)]
    assert list(kv["value"]["series"]) == [MEMORY_SERIES, KEEP_ALL_SERIES]  # plain words, not "pot"


def test_the_upload_notice_says_when_a_file_is_already_in_the_library():
    results = [
        {"name": "copy.pdf", "doc_id": "a1", "ok": True},
        {"name": "new.txt", "doc_id": "b2", "ok": True},
        {"name": "bad.pdf", "ok": False, "message": "damaged"},
    ]
    same = [{"name": "book.pdf", "doc_id": "a1", "ok": True}]
    assert render.upload_notice(same, {"a1": "book.pdf"}) == (
        "- **book.pdf** is already in the library (the same file): its memory is reused"
    )
    assert render.upload_notice(results, {"a1": "book.pdf"}).splitlines() == [
        "- **copy.pdf** has the same content as **book.pdf**, already in the library",
        "- **new.txt** added to the library",
        "- ⚠️ **bad.pdf** was not added: damaged",
    ]


def test_the_document_selector_names_documents_and_adds_an_id_only_where_names_repeat():
    from infinipot.app.web.shared_phrases import document_options

    rows = [
        {"name": "libtasn1.pdf", "doc_id": "3917eb46aa", "ready": True},
        {"name": "notes.txt", "doc_id": "aaaa1111bb", "ready": False},
        {"name": "notes.txt", "doc_id": "bbbb2222cc", "ready": False},
    ]
    assert [label for label, _ in document_options(rows)] == [
        "libtasn1.pdf",
        "notes.txt (aaaa1111)",
        "notes.txt (bbbb2222)",
    ]


def test_the_eta_is_measured_from_the_reads_first_step_to_its_latest_and_counts_down_between_steps():
    from infinipot.app.web.jobs import READING, ReadJob, ReadRequest
    from infinipot.core.config import PotConfig

    request = ReadRequest("doc", "book.pdf", Path("book.pdf"), PotConfig())
    job = ReadJob(1, request, status=READING, tokens_total=10_000)
    job.reading_since, job.tokens_read = 100.0, 0
    assert job.snapshot(now=120.0)["eta_seconds"] is None  # the first step is still being read
    job.first_step = job.last_step = (130.0, 4_000)  # the first step took 30 s (loading, filling)
    job.tokens_read = 4_000
    assert job.snapshot(now=135.0)["eta_seconds"] is None  # one step: no speed yet
    job.last_step, job.tokens_read = (140.0, 6_000), 6_000
    # 2,000 in 10 s: 4,000 left, 20 s, then a second less each second until the next step (measured up to now, the
    # rate fell between steps and the ETA rose: 20 s, then 30 s at 145 s).
    assert [job.snapshot(now=now)["eta_seconds"] for now in (140.0, 141.0, 145.0)] == pytest.approx([20, 19, 15])
