"""A judge that has learned what a unit that answers a question looks like: a small head over what the judge's
pass already computes, trained on thousands of questions made from documents outside the development set.

The judge (core.answer.answer_sentences) scores each unit by the mean log-probability of the question after it.
That one number misses what a person sees at once: whether the few words the question turns on ("default",
"decodes", a name) become likely after the unit, or only the question's frame does. The head reads, for each
unit, from the same forwards (rerank.Judgement, nothing more run):

- the question's per-token log-probabilities after the unit against after no text: their mean, spread, best and
  worst gains, the share of tokens that gain (TOKEN_FEATURES);
- the model's last hidden state after the question, and its difference from the one after no text;
- today's signals (core.answer.answer_confidence: rank, lead, margin, kind asked, cover, rare cover).

One hidden layer gives each unit the probability that it holds the answer; the likeliest is stated at
`stated` or more, shown as "the passage that seems to answer" at `closest` or more, and below that nothing read
answers. The head and its thresholds are fitted by `python -m benchmarks.judge.train` (data:
`python -m benchmarks.judge.make_data`) into assets/judge_head.safetensors, for the model whose hidden states it
read (its identity is stored with it); any other model decides with core.answer.answer_confidence. None is shipped:
the head trained so far did not decide better than that on the development set (docs/experiments.md).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import torch

from .answer_confidence import AskedAbout, candidate_indices, sentence_features
from .answer_sentences import Sentence
from .rerank import Judgement

HEAD_FILE = "judge_head.safetensors"
# today's signals the head reads: core.answer.answer_confidence.FEATURES but best_span and names, which the
# training questions cannot give as the app does (their passages are not found by the reranker, and their rare
# names would be counted in other documents' terms)
SIGNALS = ("first", "rank", "lead", "margin", "kind", "cover", "rare_cover")
TOKEN_FEATURES = (
    "gain_mean", "gain_max", "gain_min", "gain_top3", "gain_std", "gains_over_1", "gains_over_3", "worst_token",
    "question_tokens", "behind_best", "gain_max_behind_best",
)  # fmt: skip


@dataclass(frozen=True)
class JudgeHead:
    """A fitted head: inputs standardised by `mean` and `std` (F,), then w2 · tanh(w1 x + b1) + b2."""

    w1: torch.Tensor  # (H, F)
    b1: torch.Tensor  # (H,)
    w2: torch.Tensor  # (H,)
    b2: float
    mean: torch.Tensor  # (F,)
    std: torch.Tensor  # (F,)
    # The model whose judge's hidden states it read (LoadedModel.identity) and their width.
    model: str
    hidden_size: int
    stated: float  # the likeliest unit is the answer at this probability or more
    closest: float  # ... shown as the passage that seems to answer at this or more (below: not found)
    candidates: int = 8  # the judge's best units (that add a word to the question) the head weighs
    uses_states: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.closest <= self.stated <= 1.0:
            raise ValueError(f"the head's thresholds must satisfy 0 <= closest <= stated <= 1, got {self}")
        if self.w1.shape[1] != self.mean.shape[0] or self.w1.shape[0] != self.w2.shape[0]:
            raise ValueError("the judge head's weights do not fit together")
        if self.mean.shape[0] != feature_count(self.hidden_size, self.uses_states):
            raise ValueError(f"the judge head expects {self.mean.shape[0]} inputs, its features give another number")

    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """(N, F) inputs -> (N,) probabilities."""
        z = (x - self.mean) / self.std  # (N, F)
        return torch.sigmoid(torch.tanh(z @ self.w1.T + self.b1) @ self.w2 + self.b2)  # (N,)

    def to_tensors(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        tensors = {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": torch.tensor([self.b2]), "mean": self.mean,
                   "std": self.std}  # fmt: skip
        meta = {"model": self.model, "hidden_size": str(self.hidden_size), "stated": repr(self.stated),
                "closest": repr(self.closest), "candidates": str(self.candidates),
                "uses_states": json.dumps(self.uses_states)}  # fmt: skip
        return tensors, meta

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> JudgeHead:
        return cls(
            tensors["w1"].float(), tensors["b1"].float(), tensors["w2"].float(), float(tensors["b2"][0]),
            tensors["mean"].float(), tensors["std"].float(), meta["model"], int(meta["hidden_size"]),
            float(meta["stated"]), float(meta["closest"]), int(meta["candidates"]), json.loads(meta["uses_states"]),
        )  # fmt: skip


def feature_count(hidden_size: int, uses_states: bool = True) -> int:
    return len(SIGNALS) + len(TOKEN_FEATURES) + (2 * hidden_size if uses_states else 0)


def load_head(path) -> JudgeHead:
    """A head from its safetensors file."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return JudgeHead.from_tensors({name: f.get_tensor(name) for name in f.keys()}, f.metadata())


def save_head(head: JudgeHead, path) -> None:
    from safetensors.torch import save_file

    tensors, meta = head.to_tensors()
    save_file({name: t.contiguous() for name, t in tensors.items()}, str(path), metadata=meta)


@functools.lru_cache(maxsize=1)
def shipped_head() -> JudgeHead | None:
    """The head shipped in assets/, or None when there is none."""
    source = resources.files("infinipot.assets").joinpath(HEAD_FILE)
    if not source.is_file():
        return None
    with resources.as_file(source) as path:
        return load_head(path)


def head_for(identity: str, hidden_size: int) -> JudgeHead | None:
    """The shipped head when it was fitted on this model's judge, else None."""
    head = shipped_head()
    if head is None or head.model != identity or head.hidden_size != hidden_size:
        return None
    return head


def token_features(one: Judgement, blank: Judgement, best_score: float, best_gain: float) -> dict[str, float]:
    """TOKEN_FEATURES of a unit's Judgement against no text's (`best_*`: the best candidate's score and top gain)."""
    tokens = torch.tensor(one.tokens, dtype=torch.float32)  # (q,)
    gains = tokens - torch.tensor(blank.tokens, dtype=torch.float32)  # (q,)
    top = gains.topk(min(3, len(gains))).values
    return {
        "gain_mean": float(gains.mean()),
        "gain_max": float(gains.max()),
        "gain_min": float(gains.min()),
        "gain_top3": float(top.mean()),
        "gain_std": float(gains.std()) if len(gains) > 1 else 0.0,
        "gains_over_1": float((gains > 1).float().mean()),
        "gains_over_3": float((gains > 3).float().mean()),
        "worst_token": float(tokens.min()),
        "question_tokens": math.log(len(gains)),
        "behind_best": one.score - best_score,
        "gain_max_behind_best": float(gains.max()) - best_gain,
    }


def unit_inputs(
    ranked: Sequence[Sentence],
    indices: Sequence[int],
    blank: Judgement,
    question: str,
    asked: AskedAbout,
    uses_states: bool = True,
) -> torch.Tensor:
    """The head's inputs (len(indices), F) for ranked[i] of `indices`, each judged in detail."""  # fmt: skip
    judged = [ranked[i].judgement for i in indices]
    if any(j is None or not j.tokens for j in judged) or not blank.tokens:
        raise ValueError("the learned judge needs the units judged in detail (answer_sentences.judged_in_detail)")
    gains = [max(a - b for a, b in zip(j.tokens, blank.tokens, strict=True)) for j in judged]
    best_score, best_gain = max(j.score for j in judged), max(gains)
    rows = []
    for i, one in zip(indices, judged, strict=True):
        signals = sentence_features(ranked, i, question, blank.score, asked)
        tokens = token_features(one, blank, best_score, best_gain)
        row = torch.tensor([signals[name] for name in SIGNALS] + [tokens[name] for name in TOKEN_FEATURES])
        if uses_states:
            row = torch.cat([row, one.state.float(), (one.state - blank.state).float()])
        rows.append(row)
    return torch.stack(rows).float()  # (N, F)


def learned_likeliest(
    ranked: Sequence[Sentence], blank: Judgement, question: str, head: JudgeHead, asked: AskedAbout | None = None
) -> tuple[Sentence | None, float]:
    """The candidate the head finds likeliest to hold the answer, and that probability; (None, 0.0) when no ranked
    unit adds a word to the question. Ties: the better ranked."""
    asked = asked or AskedAbout()
    indices = candidate_indices(ranked, _Candidates(head.candidates), question, earlier=asked.earlier)
    if not indices:
        return None, 0.0
    chances = head.probabilities(unit_inputs(ranked, indices, blank, question, asked, head.uses_states))  # (N,)
    best = int(torch.argmax(chances))  # the first of equals: the better ranked
    return ranked[indices[best]], float(chances[best])


@dataclass(frozen=True)
class _Candidates:
    """What candidate_indices reads of a confidence model: how many candidates."""

    candidates: int
