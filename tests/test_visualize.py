"""The visualization's pure functions on a hand-made pot, and the HTML they become."""

from __future__ import annotations

import re
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


def test_the_legend_says_in_plain_words_that_only_coloured_text_is_remembered():
    legend = render.legend_html("one head")
    assert "The model remembers only the coloured text" in legend
    assert "surprising to the model" in legend and "important to a summary of the text" in legend
    assert "sink" not in legend  # sink tokens are the template's, never in the document's text
    assert "novelty under compression (NuC)" in legend  # the paper's terms, in the small print


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
    caption = render.window_caption(window)
    assert "a local layer: it sees only the latest 512 tokens" in caption and "54 of the latest text" in caption
    assert "the latest text, all that a local layer sees" in render.legend_html("one head", local=True)
    global_layer = {**window, "local_window": None, "kept": {**window["kept"], "recent": 0}}
    assert "local" not in render.window_caption(global_layer) + render.legend_html("one head")


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
    from infinipot.app.web.page.handlers import MEMORY_SERIES, _memory_frames

    kv, process = _memory_frames(
        {"kv": [[0, "pot", 1.0], [100, "full KV cache", 4.0]], "process": [[0, 1856.0], [100, 1866.0]]}
    )
    assert kv["y_lim"] == [0, pytest.approx(4.4)] and process["y_lim"] == [0, pytest.approx(2052.6)]
    assert list(kv["value"]["series"]) == [MEMORY_SERIES, "full KV cache"]  # the legend's words, not "pot"


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
    from infinipot.app.web.wording import document_options

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


def test_the_eta_is_measured_from_the_reads_first_step():
    from infinipot.app.web.jobs import READING, ReadJob, ReadRequest
    from infinipot.core.config import PotConfig

    request = ReadRequest("doc", "book.pdf", Path("book.pdf"), PotConfig())
    job = ReadJob(1, request, status=READING, tokens_total=10_000)
    job.reading_since, job.tokens_read = 100.0, 0
    assert job.snapshot(now=120.0)["eta_seconds"] is None  # the first step is still being read
    job.first_step, job.tokens_read = (130.0, 4_000), 4_000  # the first step took 30 s (loading, filling)
    job.tokens_read = 6_000
    assert job.snapshot(now=140.0)["eta_seconds"] == pytest.approx(20.0)  # 2,000 in 10 s: 4,000 left
