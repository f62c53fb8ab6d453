"""How likely a judged sentence is to hold the answer: one calibrated number instead of rules made per case.

The judge (core.answer.answer_sentences) ranks the passages' sentences by how likely the question is after each.
Its best sentence holds the answer for about two questions in three, and nothing in its score alone says which. A few
signals that any document has say more together:

- first, rank: where the judge put the sentence (rank as log(1 + rank));
- lead: how far its score leads the next sentence's (a sentence that stands out; the last leads nothing);
- margin: its score above the question's likelihood after no text at all;
- kind: it adds to the question the kind of thing asked (core.answer.question_kind: a number, a version, a name, an
  identifier such as an option or a variable);
- cover, rare_cover: the share of the question's content words it holds, plainly and weighted by how few of the
  ranked sentences hold each (a word every sentence holds says nothing);
- names: it holds the names the question asks about that the document hardly mentions (core.answer.question_names);
- best_span: it comes from the passage the span reranker found likeliest.

A logistic model of "this sentence holds an accepted answer" over them, fitted on the tuning half of the
development set (`python -m benchmarks.devset.decide`; the held-out half was not used), gives each of the judge's
best `candidates` sentences a probability. When the likeliest is `sure` or more, it is the answer; at `unsure` or
less, no direct answer is found. In between, the model writes a short answer of its own (core.answer.written_answer) and
a second logistic model weighs two more signals, whether that answer agrees with a candidate and which sentence it
copied (a candidate too, wherever the judge ranked it); the likeliest candidate is then the answer when its
probability reaches `threshold`. Otherwise the answer is "No direct answer found", quoting it.

The thresholds are those at which, on the tuning half with each document decided by models fitted on the others
(what an unseen kind of document looks like), the most questions were stated right with at most one in ten stated
wrong and at least four unanswerable questions in five marked (benchmarks/results/devset/grounded/report.md,
docs/experiments.md "A decision that transfers").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .answer_sentences import Sentence
from .grounding import content_words, holds_word, word_keys
from .question_kind import holds_kind
from .question_names import holds_names
from .written_answer import agrees, copied_index

FEATURES = ("first", "rank", "lead", "margin", "kind", "cover", "rare_cover", "names", "best_span")
# With the writer's answer: it agrees with the sentence (core.answer.written_answer.agrees), it copied from it.
WRITER_FEATURES = (*FEATURES, "agree", "copied")


@dataclass(frozen=True)
class ConfidenceModel:
    # Weights per FEATURES and the bias, and per WRITER_FEATURES with the writer's, fitted on the development set's
    # tuning half (122 questions over 8 documents; L2 penalty 1): `python -m benchmarks.devset.decide --fit`.
    weights: tuple[float, ...] = (0.605, -0.298, 0.987, -0.238, 1.259, 1.633, 1.021, 0.521, 1.240)
    bias: float = -4.973
    writer_weights: tuple[float, ...] = (0.216, -0.779, 0.942, -0.351, 1.088, 1.603, 1.157, 0.530, 1.180, 1.615, 0.314)
    writer_bias: float = -4.393
    # Without the writer, the likeliest candidate is stated at `sure` or more and no direct answer is found at
    # `unsure` or less; in between the writer runs and the likeliest is stated at `threshold` or more. Tuning half,
    # each document decided by models fitted on the others: (0.2, 0.65, 0.48) -> 42 of 86 stated right, 7 stated
    # wrong, 29 of 36 unanswerable marked, the writer run for 70 of 122; the writer never: 44, 9, 29 (0.48); the
    # writer always: 42, 7, 29 (0.48). The first development set's 54 answered in the document's words or the
    # closest passage: 36 with the writer in between, 34 with it never.
    sure: float = 0.65
    unsure: float = 0.2
    threshold: float = 0.48
    # Not stated, the likeliest is shown as the passage that seems to answer (answer_state "closest") at this
    # probability or more: on the tuning half's recorded signals, 11 of the 22 such passages hold the answer and 4
    # are of unanswerable questions (at 0.2, 15 of 45 and 17); below it no direct answer is found ("not_found").
    closest: float = 0.35
    # The judge's best sentences that may be the answer (and the one the writer copied from).
    candidates: int = 3
    # The model whose signals the weights were fitted on (core.model's identity of the bundled model); None: any.
    # Another model's likelihoods run on scales of their own, so for it `for_model` decides strictly.
    fitted_on: str | None = "smollm2-135m-instruct-q4_1"
    # For a model the weights were not fitted on: the likeliest is stated only at this probability, and the writer
    # is never weighed (a base model writes poorly). Chosen on Gemma 3 270M's tuning half, the highest share stated
    # right with no more stated wrong than the bundled model's (7 of 86): 0.6 -> 35 of 86 right, 5 wrong, 34 of 36
    # unanswerable marked; 0.5 -> 44, 8, 30; 0.7 -> 25, 1, 36 (`python -m benchmarks.devset.strict`).
    strict: float = 0.6

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise ValueError(f"the confidence model needs {len(FEATURES)} weights ({', '.join(FEATURES)})")
        if len(self.writer_weights) != len(WRITER_FEATURES):
            raise ValueError(f"with the writer it needs {len(WRITER_FEATURES)} weights ({', '.join(WRITER_FEATURES)})")
        for name in ("unsure", "threshold", "sure", "closest"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"the confidence's {name} must be a probability, got {getattr(self, name)}")
        if not self.unsure <= self.sure:
            raise ValueError(f"unsure ({self.unsure}) must not exceed sure ({self.sure})")
        if self.closest > min(self.threshold, self.sure):
            raise ValueError(f"closest ({self.closest}) must not exceed the threshold or sure: it is not stated")
        if self.candidates < 1:
            raise ValueError(f"at least one candidate sentence is needed, got {self.candidates}")
        if not self.closest <= self.strict <= 1.0:
            raise ValueError(f"the strict threshold must lie between closest ({self.closest}) and 1, got {self.strict}")

    def fitted_for(self, identity: str) -> bool:
        return self.fitted_on is None or identity == self.fitted_on

    def for_model(self, identity: str) -> ConfidenceModel:
        """This decision for the model of `identity`: as fitted when fitted on it, else the strict rule (the
        likeliest stated only at `strict`, the writer never weighed)."""
        if self.fitted_for(identity):
            return self
        return replace(self, sure=self.strict, unsure=self.strict, threshold=self.strict, fitted_on=None)


def _question_words(question: str) -> list[str]:
    return list(dict.fromkeys(word.lower() for word in content_words(question)))


def cover(sentence: str, question: str) -> float:
    """The share of the question's content words the sentence holds (1 when the question has none)."""
    words = _question_words(question)
    if not words:
        return 1.0
    found = word_keys([sentence])
    return sum(holds_word(found, word) for word in words) / len(words)


def rare_cover(sentence: str, question: str, ranked: Sequence[str], held: Sequence[set[str]] | None = None) -> float:
    """cover, each word weighed by log((n + 1) / (1 + the ranked sentences holding it)), n the ranked sentences.
    `held`: each ranked sentence's word_keys, when known."""
    words = _question_words(question)
    if not words:
        return 1.0
    n, held = len(ranked), held if held is not None else [word_keys([text]) for text in ranked]
    weights = {w: math.log((n + 1) / (1 + sum(holds_word(found, w) for found in held))) for w in words}
    total = sum(weights.values()) or 1.0
    found = word_keys([sentence])
    return sum(weights[w] for w in words if holds_word(found, w)) / total


@dataclass(frozen=True)
class AskedAbout:
    """What a sentence is weighed against besides the question: the `earlier` question a follow-up follows, the
    rare `names` asked about (held with the `passages` the sentences come from), and `best_span`, the index of the
    passage the span reranker found likeliest (-1: none)."""

    earlier: str = ""
    names: Sequence[str] = ()
    passages: Sequence[str] = ()
    best_span: int = -1


def sentence_features(
    ranked: Sequence[Sentence],
    index: int,
    question: str,
    no_text: float,
    asked: AskedAbout = AskedAbout(),
    held: Sequence[set[str]] | None = None,
) -> dict[str, float]:
    """The FEATURES of ranked[index] (the judge's ranking, best first). `no_text`: the question's likelihood after
    no text; `held`: each ranked sentence's word_keys, when known (likeliest computes them once)."""
    sentence = ranked[index]
    after = ranked[index + 1].score if index + 1 < len(ranked) else sentence.score  # the last leads nothing
    texts = [s.text for s in ranked]
    return {
        "first": float(index == 0),
        "rank": math.log1p(index),
        "lead": sentence.score - after,
        "margin": sentence.score - no_text,
        "kind": float(holds_kind(sentence.text, question, asked.earlier)),
        "cover": cover(sentence.text, question),
        "rare_cover": rare_cover(sentence.text, question, texts, held),
        "names": float(holds_names(sentence, asked.names, asked.passages)),
        "best_span": float(sentence.span == asked.best_span),
    }


def writer_features(
    ranked: Sequence[Sentence], index: int, written: str, question: str, earlier: str = "", copied: int | None = -1
) -> dict:
    """The two features the writer's answer adds for ranked[index]: it agrees with it, it copied from it (`copied`:
    copied_index's answer, when known)."""
    copied = copied_index(written, ranked) if copied == -1 else copied
    return {
        "agree": float(agrees(written, ranked[index].text, f"{earlier} {question}")),
        "copied": float(index == copied),
    }


def probability(features: dict[str, float], model: ConfidenceModel, written: bool = False) -> float:
    """The probability that the sentence with these features holds the answer (the model with the writer's
    features when `written`)."""
    names, weights, bias = FEATURES, model.weights, model.bias
    if written:
        names, weights, bias = WRITER_FEATURES, model.writer_weights, model.writer_bias
    z = bias + sum(w * features[name] for w, name in zip(weights, names, strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def candidate_indices(
    ranked: Sequence[Sentence], model: ConfidenceModel, question: str, written: str | None = None, earlier: str = ""
) -> list[int]:
    """The judge's best model.candidates among the sentences that add something to the question (and the earlier
    ones it follows): a content word of their own. One that only repeats the question ("- Blob.seek()", a table
    of contents' line for "What does Blob.seek() do?") cannot answer it, however likely the judge finds the
    question after it. With a written answer, the sentence it copied from too."""
    asked = word_keys([question, earlier])
    adding = [i for i, s in enumerate(ranked) if any(not holds_word(asked, w) for w in content_words(s.text))]
    indices = adding[: model.candidates]
    copied = copied_index(written, ranked) if written else None
    if copied is not None and copied not in indices and copied in adding:
        indices.append(copied)
    return indices


def likeliest(
    ranked: Sequence[Sentence],
    question: str,
    no_text: float,
    model: ConfidenceModel,
    asked: AskedAbout = AskedAbout(),
    written: str | None = None,
) -> tuple[Sentence | None, float]:
    """The candidate likeliest to hold the answer, and that likelihood; (None, 0.0) when no ranked sentence adds
    anything to the question. With `written` (the writer's answer), its candidates and features too. Ties: the better
    ranked."""
    best, chance = None, 0.0
    held = [word_keys([s.text]) for s in ranked]
    copied = copied_index(written, ranked) if written else None
    for index in candidate_indices(ranked, model, question, written, asked.earlier):
        features = sentence_features(ranked, index, question, no_text, asked, held)
        if written is not None:
            features |= writer_features(ranked, index, written, question, asked.earlier, copied)
        p = probability(features, model, written is not None)
        if best is None or p > chance:
            best, chance = ranked[index], p
    return best, chance
