"""Answers a user can trust: what the passages say, or plainly that no direct answer was found.

The passages' sentences are ranked by how likely the question is after each one alone (core.answer_sentences, the
judge). When the best sentence stands out (the question's likelihood after it exceeds that after the next best by
`standout`) and it adds to the question something of the kind asked for (core.question_kind: a number for "how
many", a name for "who"), it is the answer at once, in the document's words. On the development set the judge's
best sentence holds the answer for 33 of 54 questions; where it stood out by 0.75 it was right 24 times in 26, and
22 of 24 unanswerable questions got no such sentence (benchmarks/devset/results/grounded).

Otherwise the model writes an answer from the passages (the writer), and it is compared with the judge's best
sentences. The 135M model judges far better than it writes: the written answer holds the fact for 22 of 54
questions. Neither is reliable alone, but where they agree, the sentence is right 14 times in 17: agreement is the
confidence.

- They agree when the written answer adds something to the question, at least `agreement` of the content words
  it adds are in the judge's sentence, and the sentence holds the kind of thing asked. The answer is then that
  sentence, the document's own words (`answerable` true): a name, number or version in it is the document's,
  never the model's prior.
- The sentences it may agree with are the judge's `shortlist` best and the one it copied at least `copied_words`
  consecutive words from (its source, wherever the judge ranked it). The writer reads each passage up to its last
  whole sentence: a passage that ends with the start of a table of contents is continued, not answered.
- For a question asking no number, version, date or person, the sentence must also hold one of the question's
  own content words (`on_topic`): a writer that copies an unrelated sentence whole agrees with it trivially.
- A follow-up asking a number, version, date or name whose fact none of the judge's best sentences holds is
  answered with the earlier answer's sentence when that holds one (`earlier_fact`).
- Otherwise the answer says plainly that no direct answer was found and quotes the closest sentence
  (`answerable` false). This also covers questions the document does not answer: no sentence stands out, the
  writer invents, and the invention is not in the sentence (21 of 24 unanswerable development questions are marked
  so).

`style` "free" shows the written answer unchecked (the answer before this module); "sentence" always answers with
the judge's sentence. Measured side by side: benchmarks/devset/results/grounded. A question-likelihood margin
(`answerable_margin`) can also mark answers unanswerable; it is off by default: the best sentence's margin over no
text was as high for unanswerable questions as for answerable ones.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from .answer_sentences import Sentence, longest_copied_run, ranked_sentences, whole_sentences_end
from .decoding import DecodingConfig, decoding_for
from .engine import AnswerStats, Engine
from .grounding import content_words, unsupported_words
from .question_kind import holds_kind, question_kind

GROUNDING_STYLES = ("checked", "sentence", "free")
NOT_ANSWERED = "No direct answer found in the document."


@dataclass(frozen=True)
class GroundingConfig:
    # How the answer is made from the passages read (the module's docstring); measured on the development set
    # (benchmarks/devset/results/grounded).
    style: str = "checked"
    # The question's mean log-probability per token after the best sentence must exceed its log-probability after
    # no text by this much, or the passages are taken not to answer it; None: no such rule (the default, see the
    # module's docstring).
    answerable_margin: float | None = None
    # Share of the content words the written answer adds to the question that must be in the judge's sentence
    # for the two to agree. Measured with the best sentence alone (before the shortlist): 1.0 agreed on 15
    # development questions (the sentence right for 13), 0.8 on 19 (17), 0.5 on 20 (17); unanswerable questions
    # marked: 22 of 24 at each.
    agreement: float = 0.8
    # The judge's best sentences the written answer may agree with: the best-ranked one it agrees with answers.
    # The writer then also chooses among the judge's shortlist (the right sentence is often second or third).
    shortlist: int = 3
    # Most tokens the writer writes when its answer is only checked (not shown): its claim is in its first
    # sentence, and a long answer only adds words the sentence lacks (and seconds before the first token).
    written_tokens: int = 48
    # Sentences scored at most (each a short row of one batched pass): about the three passages read.
    sentences: int = 32
    # The best sentence answers without the writer when the question's mean log-probability per token after it
    # exceeds that after the next best sentence by this much (and it holds the kind of thing asked); None: never.
    # Development set, with agreement as the fallback, replayed on the judge's recorded rankings: 0.5 -> 29 right,
    # 7 confidently wrong, 19 of 24 unanswerable marked; 0.6 -> 30, 5, 21; 0.75 -> 30, 4, 21; 0.8 -> 29, 4, 21;
    # 1.0 -> 24, 3, 22; None -> 14, 2, 23 (benchmarks/devset/results/grounded for the runs themselves).
    standout: float | None = 0.75
    # The writer reads the judge's best this many sentences (best last, nearest the question) instead of the
    # passages; None: the passages. It then writes more answers the sentences hold, and copies more of them as they
    # are: with 6 (AMX, bf16), correct 35 -> 34 (stated 30 -> 32), confidently wrong 3 -> 5, unanswerable marked
    # 18 -> 16 of 24, follow-ups 13 -> 14 of 20; with the shortlist at 6 too, 34 (33), 7, 15, 15. Kept off.
    writer_sentences: int | None = None
    # A name the question uses that the document mentions at most this many times must be in the sentence answered
    # with or in its passage (core.question_names); None: no such rule. On the development set it marks "Who was
    # the captain of the Margarethe?" and "Who is the maintainer of the Debian package of libtasn1?" unanswerable
    # and changes no other answer (the sentence alone, not its passage, lost one follow-up's stated answer).
    rare_name_mentions: int | None = 2
    # The sentence the written answer copies at least this many consecutive words from (the longest such run, among
    # all the judge ranked) may agree with it too, wherever the judge ranked it: the writer often answers from the
    # sentence ranked fourth or fifth ("She took a room at an inn called The Copper Kettle ..."), and quoting the
    # sentence it copied is quoting its source. None: only the shortlist.
    copied_words: int | None = 4
    # The writer reads each passage up to its last whole sentence (answer_sentences.whole_sentences_end), not
    # the start of a table of contents or heading after it.
    whole_sentences: bool = True
    # A written answer to a question of no particular kind agrees only with a sentence holding one of the
    # question's own content words (on_topic). Development set: it turned the follow-ups "And which program does
    # the reverse?" (asn1Coding's sentence, the earlier answer's) and "How must it be written to disk?" (the
    # header table) from stated wrong answers into "no direct answer found".
    on_topic: bool = True

    def __post_init__(self) -> None:
        if self.style not in GROUNDING_STYLES:
            raise ValueError(f"answer grounding must be one of {', '.join(GROUNDING_STYLES)}, got {self.style!r}")
        if not 0.0 < self.agreement <= 1.0:
            raise ValueError(f"agreement must be a share above 0 and at most 1, got {self.agreement!r}")
        if self.shortlist < 1:
            raise ValueError(f"the judge's shortlist needs at least 1 sentence, got {self.shortlist}")
        if self.written_tokens < 1:
            raise ValueError(f"the checked answer needs at least 1 token, got {self.written_tokens}")
        if self.sentences < 1:
            raise ValueError(f"at least one sentence must be scored, got {self.sentences}")
        if self.standout is not None and not self.standout >= 0.0:
            raise ValueError(f"standout must be a log-probability gap of 0 or more, or None, got {self.standout!r}")
        if self.rare_name_mentions is not None and self.rare_name_mentions < 0:
            raise ValueError(f"rare name mentions must be 0 or more, or None, got {self.rare_name_mentions!r}")
        if self.copied_words is not None and self.copied_words < 1:
            raise ValueError(f"copied words must be 1 or more, or None, got {self.copied_words!r}")
        if self.writer_sentences is not None and self.writer_sentences < 1:
            raise ValueError(f"the writer needs at least 1 sentence to read, got {self.writer_sentences}")


@dataclass
class Verdict:
    """What the check found (kept in the answer's stats)."""

    answerable: bool = True
    sentence: Sentence | None = None  # the sentence answered with or quoted: the agreeing one, else the best
    ranked: tuple[Sentence, ...] = ()  # the judge's sentences, best first (at most GroundingConfig.sentences)
    margin: float | None = None  # the best sentence's score above the question's likelihood after no text
    kept_written: bool = True  # the written answer was shown (False: the sentence, or the not-found line)
    unsupported: tuple[str, ...] = ()  # content words of the written answer that the sentence does not hold
    written: str = ""  # the answer the model wrote, shown or not ("" when the best sentence stood out)
    standout: float | None = None  # the best sentence's score above the next best's
    # why the answer is what it is: "standout", "agreement", "earlier", "free", "sentence", "margin", "none", or
    # "unheld" (no sentence holds what is asked, so the writer was not run)
    reason: str = ""


def agrees(written: str, sentence: Sentence | None, question: str, agreement: float) -> bool:
    """Whether the written answer adds content words to the question, `agreement` of them are in the sentence,
    and every one with a digit is."""
    if sentence is None or not written:
        return False
    added = unsupported_words(written, [question])
    if not added:
        return False
    missing = unsupported_words(written, [sentence.text, question])
    if any(any(ch.isdigit() for ch in word) for word in missing):
        return False  # a number, version or date the sentence does not hold is the fact asked for, not a detail
    return (len(added) - len(missing)) / len(added) >= agreement


def holds_names(sentence: Sentence, names: Sequence[str], passages: Sequence[str]) -> bool:
    """Whether the sentence, or the passage it comes from (`passages`, indexed by Sentence.span), holds each of
    `names` (core.question_names: the rare names the question asks about). The passage counts: the sentence that
    answers often says "he" of the name the sentence before it gives ("Tomas had been taken on as an apprentice
    ... In his first month he had helped Master Ruel to repair the great clock")."""
    if not names:
        return True
    held = [sentence.text] + ([passages[sentence.span]] if 0 <= sentence.span < len(passages) else [])
    return not unsupported_words(" ".join(names), held)


def on_topic(sentence: Sentence, question: str) -> bool:
    """Whether the sentence speaks of something the question itself names, when the question asks for no number,
    version, date or person (core.question_kind "other"): one of the question's content words is in it. Such a
    question's answer is recognised by its topic, not by the kind of thing it holds, and a sentence sharing no word
    with it is one the writer copied whatever was asked ("How must it be written to disk?" answered with the
    mime.cache header table). A question that names nothing ("Why?") and the other kinds pass."""
    words = content_words(question)
    if question_kind(question) != "other" or not words:
        return True
    return any(not unsupported_words(word, [sentence.text]) for word in words)


def could_answer(
    sentence: Sentence,
    question: str,
    earlier: str,
    names: Sequence[str],
    passages: Sequence[str],
    config: GroundingConfig,
) -> bool:
    """Whether a written answer agreeing with `sentence` would make it the answer: it holds the kind of thing asked,
    the question's rare `names` (with its passage) and, when `config.on_topic`, the question's topic. When no
    judged sentence could, the writer is not run: nothing it wrote could be shown."""
    return (
        holds_kind(sentence.text, question, earlier)
        and holds_names(sentence, names, passages)
        and (config.on_topic is False or on_topic(sentence, question))
    )


def stands_out(
    verdict: Verdict,
    question: str,
    earlier: str,
    standout: float | None,
    names: Sequence[str] = (),
    passages: Sequence[str] = (),
) -> bool:
    """Whether the judge's best sentence answers on its own: it leads the next best by `standout`, adds to the
    question (and the `earlier` ones it follows) the kind of thing asked (core.question_kind), and holds the
    question's rare `names` (holds_names, with the `passages` it was cut from). A single sentence has nothing to
    stand out from."""
    if standout is None or verdict.sentence is None or verdict.standout is None:
        return False
    return (
        verdict.standout >= standout
        and holds_kind(verdict.sentence.text, question, earlier)
        and holds_names(verdict.sentence, names, passages)
    )


def earlier_fact(
    ranked: Sequence[Sentence], first_carried: int, question: str, earlier: str, shortlist: int
) -> Sentence | None:
    """The earlier answer's sentence that answers a follow-up asking a number, version, date or person, when none
    of the judge's best `shortlist` sentences of the passages holds one and it does ("What version of it?" after
    "Under which license is this manual distributed?" was answered "Permission is granted ... under the terms of
    the GNU Free Documentation License, Version 1.3 ..."). The judge ranks such short follow-ups poorly: what they
    ask is in one word ("version") of a few. `first_carried`: the span index from which ranked sentences are
    earlier answers."""
    best_read = [s for s in ranked if s.span < first_carried][:shortlist]
    if question_kind(question) == "other" or any(holds_kind(s.text, question, earlier) for s in best_read):
        return None
    return next((s for s in ranked if s.span >= first_carried and holds_kind(s.text, question, earlier)), None)


def _written(engine, pot, question, passages, decoding, stats, history, pot_entries, question_first) -> Iterator[str]:
    """The writer: the model's own answer from the passages read after the pot."""
    return engine.answer(
        pot,
        question,
        decoding,
        stats,
        evidence=passages,
        pot_entries=pot_entries,
        question_first=question_first,
        history=history,
    )


def to_whole_sentences(tokenizer, ids: Sequence[int]) -> list[int]:
    """The passage's tokens up to its last whole sentence (answer_sentences.whole_sentences_end), cut between
    tokens: the longest prefix whose text stays within the kept characters."""
    ids = list(ids)
    text = tokenizer.decode(ids, skip_special_tokens=True)
    keep = whole_sentences_end(text)
    if keep >= len(text):
        return ids
    low, high = 1, len(ids)  # the longest prefix of tokens whose text is at most `keep` characters
    while low < high:
        middle = (low + high + 1) // 2
        if len(tokenizer.decode(ids[:middle], skip_special_tokens=True)) <= keep:
            low = middle
        else:
            high = middle - 1
    return ids[:low]


def copied_sentence(written: str, ranked: Sequence[Sentence], least: int | None) -> Sentence | None:
    """The ranked sentence `written` copies the longest run of consecutive words from, if that run has at least
    `least` words (ties: the better ranked)."""
    if least is None or not written:
        return None
    runs = [longest_copied_run(written, sentence.text) for sentence in ranked]
    best = max(range(len(runs)), key=lambda i: (runs[i], -i), default=None)
    return ranked[best] if best is not None and runs[best] >= least else None


# Words of the closest sentence quoted in a not-found answer: a table or listing taken for one sentence would
# otherwise fill the answer (the whole sentence is the first source shown under it).
CLOSEST_WORDS = 40


# A sentence of fewer words is a heading ("Mount Aster", "The treemagic files"), not a passage: the closest passage
# quoted when no direct answer was found is the judge's best sentence of at least this many words (the best of any
# length when none is that long). On the development set this changed 4 not-found answers' quotes; one then held
# its answer ("The file starts with the magic string "MIME-TreeMagic\0\n"." for the treemagic file), none lost it.
CLOSEST_LEAST_WORDS = 4


def closest_sentence(ranked: Sequence[Sentence]) -> Sentence | None:
    """The sentence quoted as the closest passage: the best-ranked of at least CLOSEST_LEAST_WORDS words."""
    return next((s for s in ranked if len(s.text.split()) >= CLOSEST_LEAST_WORDS), ranked[0] if ranked else None)


def not_answered(closest: Sentence | None) -> str:
    """The answer when no direct answer was found: said plainly, with the closest sentence (its first
    CLOSEST_WORDS words)."""
    if closest is None:
        return NOT_ANSWERED
    words = closest.text.split()
    quoted = closest.text if len(words) <= CLOSEST_WORDS else " ".join(words[:CLOSEST_WORDS]) + " …"
    return f"{NOT_ANSWERED} The closest passage: “{quoted}”"


def grounded_answer(
    engine: Engine,
    pot,
    question: str,
    passages: Sequence[Sequence[int]],
    decoding: DecodingConfig,
    stats: AnswerStats,
    config: GroundingConfig,
    verdict: Verdict,
    *,
    earlier: str = "",
    history: Sequence[tuple[str, str]] = (),
    carried: Sequence[str] = (),
    names: Sequence[str] = (),
    pot_entries: int | None = 0,
    question_first: bool = False,
) -> Iterator[str]:
    """Stream the checked answer to `question` from the `passages` read (token ids, in the order read);
    `verdict` is filled before the first piece; without passages the written answer streams unchecked.
    `earlier`: the earlier questions a follow-up leans on ("What version of it?"): the judge reads them before the
    question and scores the question alone (Engine.question_likelihoods' context). `carried`: earlier answers given
    in the document's words; when the follow-up asks a number, version, date or name, they are judged with the
    passages' sentences, since the fact asked for is often in the sentence just quoted ("For how many years had
    she kept it?"). A question of no particular kind does not weigh them: any earlier sentence adds some word.
    `names`: the names the question asks about that the document hardly mentions (core.question_names): the
    sentence answered with must hold each."""
    started = time.perf_counter()
    checked = bool(passages) and not (config.style == "free" and config.answerable_margin is None)
    if not checked:
        # Nothing to check against (the pot holds the whole document and is read whole), or no check asked.
        verdict.reason = "free"
        yield from _written(engine, pot, question, passages, decoding, stats, history, pot_entries, question_first)
        return
    tokenizer = engine.tokenizer
    texts = [tokenizer.decode(list(ids), skip_special_tokens=True) for ids in passages]
    first_carried = len(texts)
    if carried and question_kind(question) != "other":
        texts += list(carried)  # last: ranked_sentences takes the last passage's sentences first
    ranked = ranked_sentences(engine, texts, question, config.sentences, earlier)
    verdict.ranked = tuple(ranked)
    verdict.sentence = ranked[0] if ranked else None
    verdict.standout = ranked[0].score - ranked[1].score if len(ranked) > 1 else None
    verdict.kept_written = False
    shortlist = config.shortlist
    if config.answerable_margin is not None and verdict.sentence is not None:
        verdict.margin = verdict.sentence.score - engine.question_likelihoods([[]], question, earlier)[0]
    if config.answerable_margin is not None and (verdict.margin is None or verdict.margin < config.answerable_margin):
        verdict.answerable, verdict.reason = False, "margin"
    elif config.style == "sentence" and verdict.sentence is not None:
        answer, verdict.reason = verdict.sentence.text, "sentence"
    elif config.style == "checked" and stands_out(verdict, question, earlier, config.standout, names, texts):
        answer, verdict.reason = verdict.sentence.text, "standout"
    elif config.style == "checked" and (held := earlier_fact(ranked, first_carried, question, earlier, shortlist)):
        verdict.sentence, answer, verdict.reason = held, held.text, "earlier"
    elif config.style == "checked" and not any(
        could_answer(s, question, earlier, names, texts, config) for s in ranked
    ):
        # Whatever the writer wrote, no sentence could agree with it: not found, without the seconds of writing.
        verdict.answerable, verdict.reason = False, "unheld"
    else:
        short = decoding_for(decoding, None)
        short = replace(short, max_new_tokens=min(short.max_new_tokens, config.written_tokens))
        if config.style != "checked":
            short = decoding  # "free" with a margin, or "sentence" with nothing ranked: the writer is shown
        writer_reads = passages
        if config.whole_sentences:
            writer_reads = [to_whole_sentences(tokenizer, ids) for ids in passages]
        if config.writer_sentences is not None and ranked:
            best_last = reversed(ranked[: config.writer_sentences])
            writer_reads = [tokenizer(sentence.text, add_special_tokens=False)["input_ids"] for sentence in best_last]
        written = _written(engine, pot, question, writer_reads, short, stats, history, pot_entries, question_first)
        answer = verdict.written = "".join(written).strip()
        if config.style == "checked":
            verdict.unsupported = tuple(
                unsupported_words(answer, [verdict.sentence.text if verdict.sentence else "", question, earlier])
            )
            candidates = list(ranked[:shortlist])
            source = copied_sentence(answer, ranked, config.copied_words)
            if source is not None and source not in candidates:
                candidates.append(source)
            agreeing = next(
                (
                    s
                    for s in candidates
                    if agrees(answer, s, f"{earlier} {question}", config.agreement)
                    and could_answer(s, question, earlier, names, texts, config)
                ),
                None,
            )
            if agreeing is not None:
                verdict.sentence, answer, verdict.reason = agreeing, agreeing.text, "agreement"
            else:
                verdict.answerable, verdict.reason = False, "none"
        else:
            verdict.kept_written, verdict.reason = True, "free"
    if not verdict.answerable:
        verdict.sentence = closest_sentence(verdict.ranked)  # not answerable: the sentence was ranked[0]
        answer = not_answered(verdict.sentence)
    stats.ttft_seconds = time.perf_counter() - started
    yield answer
    stats.seconds = time.perf_counter() - started
    if not verdict.kept_written:
        stats.token_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
        stats.stopped_by = "end"
