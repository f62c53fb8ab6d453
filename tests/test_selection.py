"""Per-head selection: sinks always stay, NuC fills its share first, CaP ranks the rest, order is kept."""

import torch

from infinipot.core.selection import KEPT_NOVELTY, KEPT_SCORE, KEPT_SINK, select_entries


def test_sinks_then_novelty_then_score_sorted_by_position():
    n, keep = 12, 6
    scores = torch.tensor([[0.0] * 4 + [9, 8, 7, 6, 5, 4, 3, 2]])  # favours early non-sink entries
    novelty = torch.tensor([[0.0] * 4 + [0, 0, 0, 0, 0, 0, 5, 6]])  # the two last entries are novel
    protected = torch.arange(n)[None] < 2
    kept, reason = select_entries(scores, novelty, protected, keep, novelty_share=0.5)
    assert kept.tolist() == [[0, 1, 4, 5, 10, 11]]
    assert reason.tolist() == [[KEPT_SINK, KEPT_SINK, KEPT_SCORE, KEPT_SCORE, KEPT_NOVELTY, KEPT_NOVELTY]]


def test_each_head_selects_independently():
    scores = torch.tensor([[1.0, 0, 0, 5, 4], [1.0, 0, 5, 4, 0]])
    novelty = torch.zeros(2, 5)
    protected = torch.tensor([[True, False, False, False, False]] * 2)
    kept, _ = select_entries(scores, novelty, protected, keep=3, novelty_share=0.0)
    assert kept.tolist() == [[0, 3, 4], [0, 2, 3]]


def test_novelty_share_one_ignores_scores():
    scores = torch.tensor([[0.0, 9, 9, 0, 0]])
    novelty = torch.tensor([[0.0, 1, 1, 7, 8]])
    kept, reason = select_entries(scores, novelty, torch.zeros(1, 5, dtype=torch.bool), 2, novelty_share=1.0)
    assert kept.tolist() == [[3, 4]]
    assert set(reason.flatten().tolist()) == {KEPT_NOVELTY}
