"""Counting answers of the development set per half and per kind of document (pure, no torch).

An answer to an answerable question is one of:
- stated right: given as the document's answer (`answerable` true) and holding an accepted answer;
- stated wrong: given as the document's answer without one (a wrong fact stated with confidence);
- not found, the quote holds it: "No direct answer found" (`answerable` false) while the closest passage it quotes
  holds an accepted answer (the answer was on screen, not said);
- not found: "No direct answer found" with a quote that does not hold it.
`in passages`: one of the passages read holds an accepted answer or the evidence quote (evidence recall).

Unanswerable questions count as marked when `answerable` is false. A follow-up pair counts as right when its
follow-up's answer holds an accepted answer, and as stated right when that answer is also given as the document's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from .score import evidence_holds, is_correct, loops


@dataclass
class Tally:
    answerable: int = 0
    stated_right: int = 0
    stated_wrong: int = 0
    quote_holds: int = 0  # not found, while the quoted closest passage holds the answer
    not_found: int = 0  # not found, quote without the answer
    in_passages: int = 0
    loops: int = 0
    unanswerable: int = 0
    unanswerable_marked: int = 0
    followups: int = 0
    followups_right: int = 0
    followups_stated: int = 0
    alone_right: int = 0
    ttfts: tuple[float, ...] = ()

    def count_answer(self, stated: bool, right: bool) -> None:
        """One answerable question: stated (or not found) with (or without) an accepted answer in what it says or
        quotes."""
        self.answerable += 1
        if stated:
            self.stated_right += right
            self.stated_wrong += not right
        else:
            self.quote_holds += right
            self.not_found += not right

    def count_unanswerable(self, stated: bool) -> None:
        self.unanswerable += 1
        self.unanswerable_marked += not stated

    def line(self) -> str:
        """The answers in one line, each share of the answerable questions."""
        n = self.answerable

        def share(k: int) -> str:
            return f"{k} ({100 * k / max(n, 1):.0f}%)"

        return (
            f"stated right {share(self.stated_right)}, stated wrong {share(self.stated_wrong)}, not found while the "
            f"quote holds it {share(self.quote_holds)}, not found {self.not_found} (of {n}); unanswerable marked "
            f"{self.unanswerable_marked}/{self.unanswerable}"
        )

    @property
    def median_ttft(self) -> float | None:
        return round(statistics.median(self.ttfts), 2) if self.ttfts else None


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def tally(
    records: Iterable[dict],
    questions: dict[str, dict],
    unanswerable: dict[str, dict],
    followups: dict[str, dict],
    keys: set[str] | None = None,
) -> Tally:
    """Count one run's records (grounded.py's answer records) over the documents in `keys` (all when None)."""
    t = Tally()
    ttfts = []
    for r in records:
        if keys is not None and r["document"] not in keys:
            continue
        if r["set"] == "answerable" and r["id"] in questions:
            q = questions[r["id"]]
            t.count_answer(r["answerable"], is_correct(r["answer"], q["answers"]))
            t.in_passages += evidence_holds(r["snippets"], [*q["answers"], q["evidence"]])
            t.loops += loops(r["answer"])
            if r.get("ttft_seconds") is not None:
                ttfts.append(r["ttft_seconds"])
        elif r["set"] == "unanswerable" and r["id"] in unanswerable:
            t.count_unanswerable(r["answerable"])
        elif r["set"] == "followups" and r["id"] in followups:
            answers = followups[r["id"]]["answers"]
            right = is_correct(r["followup"]["answer"], answers)
            t.followups += 1
            t.followups_right += right
            t.followups_stated += right and r["followup"]["answerable"]
            t.alone_right += is_correct(r["standalone"]["answer"], answers)
    t.ttfts = tuple(ttfts)
    return t


HALF_HEADER = (
    "| run | half | answerable | stated right | stated wrong | not found, quote holds it | not found | in passages "
    "| loops | unanswerable marked | follow-ups right (stated) | same asked alone | median s to first token |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def half_row(run: str, half: str, t: Tally) -> str:
    n = t.answerable
    return (
        f"| {run} | {half} | {n} | {_pct(t.stated_right, n)} | {_pct(t.stated_wrong, n)} | {_pct(t.quote_holds, n)} "
        f"| {t.not_found} | {t.in_passages} | {t.loops} | {_pct(t.unanswerable_marked, t.unanswerable)} "
        f"| {_pct(t.followups_right, t.followups)} ({t.followups_stated}) | {t.alone_right}/{t.followups} "
        f"| {t.median_ttft} |"
    )


KIND_HEADER = (
    "| run | kind of document | half | answerable | right | wrong | not found (quote holds it) | answer in passages "
    "| unanswerable marked | follow-ups right |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
)


def kind_row(run: str, genre: str, half: str, t: Tally) -> str:
    return (
        f"| {run} | {genre} | {half} | {t.answerable} | {t.stated_right} | {t.stated_wrong} "
        f"| {t.quote_holds + t.not_found} ({t.quote_holds}) | {t.in_passages} "
        f"| {t.unanswerable_marked}/{t.unanswerable} | {t.followups_right}/{t.followups} |"
    )
