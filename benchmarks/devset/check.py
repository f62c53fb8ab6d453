"""Checks the devset's question files (questions, followups, unanswerable, paraphrases) against the documents.

    python -m benchmarks.devset.check [DOCS_DIR] [--questions benchmarks/devset/questions.jsonl]
        [--followups benchmarks/devset/followups.jsonl] [--unanswerable benchmarks/devset/unanswerable.jsonl]
        [--paraphrases benchmarks/devset/paraphrases.jsonl]

For every question: the fields are there, the document is known, the evidence quote occurs in the text that
infinipot.ingest extracts (whitespace runs compared as one space), one occurrence sits on the recorded page
(PDF) or line (text), and the quote itself holds an accepted answer. For every document: at least 6 questions,
with evidence in its first, middle and last third.

Every follow-up pair gets the same evidence check for its follow-up's answers, and its follow-up and standalone
wording must not already hold an answer; every document needs at least 3 pairs. Every unanswerable question
needs its fields, a known document and kind ("absent" or "near-miss"), a unique id; every document needs at
least 3, of both kinds. Its optional "in_text" terms must occur in the extracted text and its "not_in_text"
terms must not (whole words, case and punctuation ignored, as score.is_correct compares).

Every paraphrase question needs its fields and a unique id; its sentence must occur in the extracted text (on its
page or line) and hold every accepted answer, and the question must share no content word with the sentence
(content_words, fold: function words dropped, inflections folded) nor hold an answer. A "rewrites" id must name a
questions.jsonl question of the same document that shares an accepted answer. The set needs at least 40
questions, 20 of them rewrites and 20 new, and 8 for each of the four documents it covers.

Exits 1 and lists the problems when any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from .doctext import DocText
from .documents import DEFAULT_DIR, DOCUMENTS, document_path
from .score import evidence_holds, is_correct, normalize

QUESTIONS = Path(__file__).with_name("questions.jsonl")
FOLLOWUPS = Path(__file__).with_name("followups.jsonl")
UNANSWERABLE = Path(__file__).with_name("unanswerable.jsonl")
PARAPHRASES = Path(__file__).with_name("paraphrases.jsonl")
FIELDS = ("id", "document", "question", "answers", "evidence", "where")
FOLLOWUP_FIELDS = ("id", "document", "first", "followup", "standalone", "answers", "evidence", "where")
UNANSWERABLE_FIELDS = ("id", "document", "question", "kind", "why")
PARAPHRASE_FIELDS = ("id", "document", "question", "answers", "sentence", "where")
KINDS = ("absent", "near-miss")
MIN_PER_DOCUMENT = 6
MIN_FOLLOWUPS_PER_DOCUMENT = 3
MIN_UNANSWERABLE_PER_DOCUMENT = 3
MIN_PARAPHRASES = 40
MIN_PARAPHRASE_REWRITES = 20
MIN_PARAPHRASE_NEW = 20
MIN_PARAPHRASES_PER_DOCUMENT = 8


def _load_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    return _load_jsonl(path)


def load_followups(path: Path = FOLLOWUPS) -> list[dict]:
    return _load_jsonl(path)


def load_unanswerable(path: Path = UNANSWERABLE) -> list[dict]:
    return _load_jsonl(path)


def load_paraphrases(path: Path = PARAPHRASES) -> list[dict]:
    return _load_jsonl(path)


def _extent(doc: DocText) -> int:
    """Last page (PDF) or line (text) of the document."""
    return doc.where(max(0, len(doc.text) - 1)) or 1


def _texts(docs_dir: Path):
    """A loader that extracts each document once: texts(key) -> DocText."""
    cache: dict[str, DocText] = {}

    def get(key: str) -> DocText:
        if key not in cache:
            cache[key] = DocText.load(document_path(docs_dir, key))
        return cache[key]

    return get


def _check_header(number: int, item: dict, fields: tuple[str, ...], seen: set[str], problems: list[str]) -> str | None:
    """The record's label when its fields are there and its document is known (a duplicate id is reported but
    the record still checked); None, with the problem recorded, otherwise."""
    label = item.get("id", f"line {number}")
    missing = [field for field in fields if field not in item]
    if missing:
        problems.append(f"{label}: missing {', '.join(missing)}")
        return None
    if item["id"] in seen:
        problems.append(f"{label}: duplicate id")
    seen.add(item["id"])
    if item["document"] not in DOCUMENTS:
        problems.append(f"{label}: unknown document {item['document']!r}")
        return None
    return label


def _well_formed(items: list[dict], fields: tuple[str, ...], strings: tuple[str, ...], problems: list[str]):
    """(label, item) of each record whose fields are there, whose document is known and whose `strings` fields are
    non-empty strings; each other record's problem is recorded instead (a duplicate id is reported, the record
    still given)."""
    seen: set[str] = set()
    for number, item in enumerate(items, start=1):
        label = _check_header(number, item, fields, seen, problems)
        if label is None:
            continue
        if not all(isinstance(item[f], str) and item[f].strip() for f in strings):
            names = ", ".join(strings[:-1]) + " and " + strings[-1]
            problems.append(f"{label}: {names} must be non-empty strings")
            continue
        yield label, item


def _answers_ok(label: str, answers, problems: list[str]) -> bool:
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        problems.append(f"{label}: answers must be a non-empty list of strings")
        return False
    return True


def _check_evidence(label: str, item: dict, doc: DocText, problems: list[str]) -> tuple[int, int] | None:
    """Whether item's evidence holds one of its answers and is found on its page/line; returns (where, extent)
    when the quote was found (even on another page or line, which is reported), None otherwise."""
    key = item["document"]
    if not evidence_holds(item["evidence"], item["answers"]):
        problems.append(f"{label}: the evidence quote holds none of the accepted answers")
    hits = doc.find_all(item["evidence"])
    if not hits:
        problems.append(f"{label}: evidence not found in {DOCUMENTS[key].file}: {item['evidence']!r}")
        return None
    places = sorted({doc.where(hit) for hit in hits})
    if item["where"] not in places:
        unit = doc.page_or_line_label()
        problems.append(f"{label}: evidence is on {unit} {places}, not {unit} {item['where']}")
    return item["where"], _extent(doc)


def check(
    docs_dir: Path = DEFAULT_DIR, questions_path: Path = QUESTIONS, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems found (empty when all is well) and per-document coverage {key: [(where, extent), ...]}.

    `keys` limits the check to some documents (e.g. when the PDFs are not installed)."""
    problems: list[str] = []
    texts = _texts(docs_dir)
    coverage: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for label, q in _well_formed(load_questions(questions_path), FIELDS, (), problems):
        key = q["document"]
        if keys is not None and key not in keys:
            continue
        if not _answers_ok(label, q["answers"], problems):
            continue
        spot = _check_evidence(label, q, texts(key), problems)
        if spot is not None:
            coverage[key].append(spot)
    for key in DOCUMENTS if keys is None else sorted(keys):
        spots = coverage.get(key, [])
        if len(spots) < MIN_PER_DOCUMENT:
            problems.append(f"{key}: {len(spots)} questions with valid evidence, want at least {MIN_PER_DOCUMENT}")
            continue
        thirds = {min(2, 3 * (where - 1) // extent) for where, extent in spots}
        if thirds != {0, 1, 2}:
            names = ", ".join(("beginning", "middle", "end")[t] for t in sorted({0, 1, 2} - thirds))
            problems.append(f"{key}: no question's evidence in the document's {names}")
    return problems, dict(coverage)


def check_followups(
    docs_dir: Path | None = DEFAULT_DIR, path: Path = FOLLOWUPS, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems in followups.jsonl and the pairs whose evidence was found, {key: [(where, extent), ...]}.

    The structure (fields, answers, the evidence quote holding an answer, no answer already in the follow-up
    or its standalone form, at least 3 pairs a document) is checked for every pair; the evidence's place only
    for the documents in `keys` (all when None; none when docs_dir is None)."""
    problems: list[str] = []
    texts = _texts(docs_dir) if docs_dir is not None else None
    counts: Counter[str] = Counter()
    coverage: dict[str, list[tuple[int, int]]] = defaultdict(list)
    strings = ("first", "followup", "standalone")
    for label, pair in _well_formed(load_followups(path), FOLLOWUP_FIELDS, strings, problems):
        key = pair["document"]
        if not _answers_ok(label, pair["answers"], problems):
            continue
        counts[key] += 1
        if pair["followup"].strip() == pair["standalone"].strip():
            problems.append(f"{label}: the standalone question repeats the follow-up")
        for field in ("followup", "standalone"):
            if is_correct(pair[field], pair["answers"]):
                problems.append(f"{label}: the {field} question already holds an accepted answer")
        if texts is None or (keys is not None and key not in keys):
            if not evidence_holds(pair["evidence"], pair["answers"]):
                problems.append(f"{label}: the evidence quote holds none of the accepted answers")
            continue
        spot = _check_evidence(label, pair, texts(key), problems)
        if spot is not None:
            coverage[key].append(spot)
    for key in DOCUMENTS:
        if counts[key] < MIN_FOLLOWUPS_PER_DOCUMENT:
            problems.append(f"{key}: {counts[key]} follow-up pairs, want at least {MIN_FOLLOWUPS_PER_DOCUMENT}")
    return problems, dict(coverage)


def check_unanswerable(
    docs_dir: Path | None = None, path: Path = UNANSWERABLE, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems in unanswerable.jsonl and the counts {key: {"absent": n, "near-miss": n}}.

    Fields, kinds, unique ids and at least 3 questions of both kinds a document are checked always; with
    docs_dir, also that each question's "in_text" terms occur in its document's extracted text and its
    "not_in_text" terms do not (for the documents in `keys`; all when None)."""
    problems: list[str] = []
    texts = _texts(docs_dir) if docs_dir is not None else None
    normalized: dict[str, str] = {}
    counts: dict[str, Counter[str]] = {key: Counter() for key in DOCUMENTS}
    for label, q in _well_formed(load_unanswerable(path), UNANSWERABLE_FIELDS, ("question", "why"), problems):
        key = q["document"]
        if q["kind"] not in KINDS:
            problems.append(f"{label}: kind {q['kind']!r} is not one of {', '.join(KINDS)}")
            continue
        counts[key][q["kind"]] += 1
        terms = {field: q.get(field, []) for field in ("in_text", "not_in_text")}
        if not all(isinstance(t, list) and all(isinstance(s, str) and s.strip() for s in t) for t in terms.values()):
            problems.append(f"{label}: in_text and not_in_text must be lists of strings")
            continue
        if texts is None or (keys is not None and key not in keys):
            continue
        if key not in normalized:
            normalized[key] = f" {normalize(texts(key).text)} "
        text = normalized[key]
        for term in terms["in_text"]:
            if f" {normalize(term)} " not in text:
                problems.append(f"{label}: {term!r} is not in {DOCUMENTS[key].file}")
        for term in terms["not_in_text"]:
            if f" {normalize(term)} " in text:
                problems.append(f"{label}: {term!r} occurs in {DOCUMENTS[key].file}")
    for key, kinds in counts.items():
        total = sum(kinds.values())
        if total < MIN_UNANSWERABLE_PER_DOCUMENT:
            problems.append(f"{key}: {total} unanswerable questions, want at least {MIN_UNANSWERABLE_PER_DOCUMENT}")
        lacking = [kind for kind in KINDS if not kinds[kind]]
        if lacking:
            problems.append(f"{key}: no {' or '.join(lacking)} unanswerable question")
    return problems, {key: dict(kinds) for key, kinds in counts.items()}


# Paraphrase questions (paraphrases.jsonl): the question and its answering sentence share no content word.

FUNCTION_WORDS = frozenset(
    """
    a about above across after again against all along also am among an and any anybody anyone anything are aren
    around as at be because been before being below beside between both but by can cannot could couldn did didn do
    does doesn doing don down during each either else every everybody everyone everything few for from further had
    hadn has hasn have haven having he her here hers herself him himself his how however i if in into is isn it its
    itself just least less many may me might more most much must mustn my myself neither no nobody none nor not
    nothing now of off on once only onto or other others our ours ourselves out over own per same several shall shan
    she should shouldn since so some somebody someone something such than that the their theirs them themselves then
    there these they this those though through thus to too toward towards under until up upon us very via was wasn
    we were weren what whatever when whenever where whether which while who whom whose why will with within without
    won would wouldn yet you your yours yourself yourselves
    """.split()
)

# Irregular forms and British spellings, folded to one base before the suffixes are stripped.
_BASE_FORMS = {
    "began": "begin", "begun": "begin", "bound": "bind", "brought": "bring", "built": "build", "came": "come",
    "chose": "choose", "chosen": "choose", "drawn": "draw", "drew": "draw", "fell": "fall", "felt": "feel",
    "found": "find", "gave": "give", "given": "give", "gone": "go", "got": "get", "gotten": "get", "held": "hold",
    "kept": "keep", "knew": "know", "known": "know", "laid": "lay", "led": "lead", "left": "leave", "lost": "lose",
    "made": "make", "met": "meet", "paid": "pay", "ran": "run", "said": "say", "saw": "see", "seen": "see",
    "sent": "send", "sold": "sell", "spoke": "speak", "spoken": "speak", "stood": "stand", "struck": "strike",
    "taken": "take", "thought": "think", "told": "tell", "took": "take", "went": "go", "wrote": "write",
    "written": "write", "colour": "color", "colours": "color", "grey": "gray", "harbour": "harbor",
    "harbours": "harbor", "licence": "license", "licences": "license", "metre": "meter", "metres": "meter",
    "centre": "center", "centres": "center",
}  # fmt: skip
# Longest first; (suffix, shortest stem left); "ies"/"ied" become "y".
_SUFFIXES = sorted(
    [(suffix, 3) for suffix in ("ment", "ments", "ness", "ingly", "ity", "ities", "ive", "ively", "ful", "fully")]
    + [(suffix, 3) for suffix in ("less", "able", "ably", "ible", "ibly", "ous", "ously", "ure", "ures", "ion")]
    + [(suffix, 3) for suffix in ("ions", "al", "ally", "er", "ers", "or", "ors", "ly", "edly")]
    + [(suffix, 2) for suffix in ("ing", "ings", "ed", "es", "s", "ies", "ied")],
    key=lambda item: -len(item[0]),
)
_INFLECTIONS = frozenset(("ing", "ings", "ed", "es", "s", "ies", "ied"))
_DERIVATIONS = frozenset(suffix for suffix, _ in _SUFFIXES) - _INFLECTIONS
MIN_SHARED_PREFIX = 4  # folded words also match when the shorter (of at least this many letters) begins the longer


def _strip_suffix(word: str, allowed: frozenset[str]) -> tuple[str, str | None]:
    """The word less its longest allowed suffix that leaves a long enough stem, and that suffix (None: none)."""
    for suffix, shortest in _SUFFIXES:
        stem = word[: -len(suffix)]
        if suffix not in allowed or not word.endswith(suffix) or len(stem) < shortest:
            continue
        if (suffix == "s" and stem[-1] in "siu") or (suffix == "ly" and stem[-1] == "p"):  # status; supply, apply
            continue
        return stem + ("y" if suffix in ("ies", "ied") else ""), suffix
    return word, None


def fold(word: str) -> str:
    """A word's folded form: lower case, irregular forms and British spellings mapped to one base, one common
    suffix stripped (after "-s", "-es", "-ed", "-ing" one more that is not one of those: "ordered" -> "order" ->
    "ord"), a final "e" dropped, a doubled final consonant made single and a final "y" made "i". "fails",
    "failed", "failing" and "failure" all fold to "fail". Words with digits are returned as they are (lower case)."""
    word = word.lower()
    if not word.isalpha():
        return word
    word = _BASE_FORMS.get(word, word)
    word, stripped = _strip_suffix(word, _INFLECTIONS | _DERIVATIONS)
    if stripped in ("ing", "ings", "ed", "es", "s"):
        word, _ = _strip_suffix(word, _DERIVATIONS)
    if len(word) >= 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in "aeioulsz":
        word = word[:-1]
    if len(word) >= 3 and word.endswith("y"):
        word = word[:-1] + "i"
    return word


def content_words(text: str) -> dict[str, str]:
    """{folded form: the word as written} for the content words of `text`: its words as score.normalize splits
    them (every non-alphanumeric character a separator, so asn1_node is "asn1" and "node"), less function words
    and one-letter words."""
    words: dict[str, str] = {}
    for word in normalize(text).split():
        if word in FUNCTION_WORDS or (len(word) == 1 and word.isalpha()):
            continue
        words.setdefault(fold(word), word)
    return words


def _same_word(a: str, b: str) -> bool:
    """Two folded forms name the same word: equal, or (letters only) the shorter, of at least
    MIN_SHARED_PREFIX letters, begins the longer ("measur" and "meas", "reconcili" and "reconcil")."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return short.isalpha() and long.isalpha() and len(short) >= MIN_SHARED_PREFIX and long.startswith(short)


def shared_content_words(question: str, sentence: str) -> list[str]:
    """The question's content words that the sentence also has (after folding), each as "word" when written
    alike in both, or "question word/sentence word" ("failing/fails") when not. Empty when they share none."""
    in_sentence = content_words(sentence)
    shared = []
    for folded, word in content_words(question).items():
        for other_folded, other in in_sentence.items():
            if _same_word(folded, other_folded):
                shared.append(word if word == other else f"{word}/{other}")
                break
    return shared


def check_paraphrases(
    docs_dir: Path | None = DEFAULT_DIR,
    path: Path = PARAPHRASES,
    keys: set[str] | None = None,
    questions_path: Path = QUESTIONS,
) -> tuple[list[str], dict]:
    """Problems in paraphrases.jsonl and the counts {key: {"rewrite": n, "new": n}}.

    Always checked: fields, unique ids, answers, every accepted answer in the sentence (normalised as
    score.normalize; inside a word counts, so "3.14.2" is in "v3.14.2"), no accepted answer in the question, no
    content word shared by question and sentence (the words are listed), "rewrites" naming a questions.jsonl
    question of the same document with a common accepted answer, and the counts. With docs_dir, also that the
    sentence occurs in its document's extracted text (whitespace runs as one space) on its page or line, for the
    documents in `keys` (all when None)."""
    problems: list[str] = []
    texts = _texts(docs_dir) if docs_dir is not None else None
    originals = {q["id"]: q for q in load_questions(questions_path)}
    counts: dict[str, Counter[str]] = {key: Counter() for key, doc in DOCUMENTS.items() if doc.paraphrased}
    for label, p in _well_formed(load_paraphrases(path), PARAPHRASE_FIELDS, ("question", "sentence"), problems):
        key = p["document"]
        if not _answers_ok(label, p["answers"], problems):
            continue
        if not isinstance(p["where"], int) or isinstance(p["where"], bool):
            problems.append(f"{label}: where must be a page or line number")
            continue
        problems += _paraphrase_wording_problems(label, p)
        rewrites = p.get("rewrites")
        if rewrites is not None:
            problems += _rewrite_problems(label, p, originals)
        counts.setdefault(key, Counter())["rewrite" if rewrites is not None else "new"] += 1
        if texts is None or (keys is not None and key not in keys):
            continue
        problems += _sentence_place_problems(label, p, texts(key))
    problems += _paraphrase_count_problems(counts)
    return problems, {key: dict(kinds) for key, kinds in counts.items()}


def _paraphrase_wording_problems(label: str, p: dict) -> list[str]:
    """Every accepted answer in the sentence, none in the question, and no content word shared by the two."""
    problems = []
    sentence = normalize(p["sentence"])
    for answer in p["answers"]:
        if normalize(answer) not in sentence:
            problems.append(f"{label}: accepted answer {answer!r} is not in the sentence")
    if is_correct(p["question"], p["answers"]):
        problems.append(f"{label}: the question already holds an accepted answer")
    shared = shared_content_words(p["question"], p["sentence"])
    if shared:
        problems.append(f"{label}: the question shares content words with its sentence: {', '.join(shared)}")
    return problems


def _rewrite_problems(label: str, p: dict, originals: dict[str, dict]) -> list[str]:
    """A rewrite names a questions.jsonl question (`originals` by id) of the same document, shares an accepted answer
    with it and asks it in other words; only the first of these that fails is reported."""
    rewrites = p["rewrites"]
    original = originals.get(rewrites) if isinstance(rewrites, str) else None
    if original is None:
        return [f"{label}: rewrites {rewrites!r}, which is not a questions.jsonl id"]
    if original["document"] != p["document"]:
        return [f"{label}: rewrites {rewrites}, a question about {original['document']}"]
    if not {normalize(a) for a in p["answers"]} & {normalize(a) for a in original["answers"]}:
        return [f"{label}: shares no accepted answer with {rewrites}, which it rewrites"]
    if normalize(p["question"]) == normalize(original["question"]):
        return [f"{label}: repeats the question of {rewrites}, which it rewrites"]
    return []


def _sentence_place_problems(label: str, p: dict, doc: DocText) -> list[str]:
    """The sentence occurs in its document's extracted text, on the page or line that `where` says."""
    hits = doc.find_all(p["sentence"])
    if not hits:
        return [f"{label}: sentence not found in {DOCUMENTS[p['document']].file}: {p['sentence']!r}"]
    places = sorted({doc.where(hit) for hit in hits})
    if p["where"] in places:
        return []
    unit = doc.page_or_line_label()
    return [f"{label}: the sentence is on {unit} {places}, not {unit} {p['where']}"]


def _paraphrase_count_problems(counts: dict[str, Counter[str]]) -> list[str]:
    """Enough paraphrase questions for each document and in all, rewrites and new ones alike."""
    problems = []
    for key, kinds in counts.items():
        if sum(kinds.values()) < MIN_PARAPHRASES_PER_DOCUMENT:
            problems.append(
                f"{key}: {sum(kinds.values())} paraphrase questions, want at least {MIN_PARAPHRASES_PER_DOCUMENT}"
            )
    total = sum(sum(kinds.values()) for kinds in counts.values())
    rewrites_total = sum(kinds["rewrite"] for kinds in counts.values())
    if total < MIN_PARAPHRASES:
        problems.append(f"paraphrases: {total} questions, want at least {MIN_PARAPHRASES}")
    if rewrites_total < MIN_PARAPHRASE_REWRITES:
        problems.append(f"paraphrases: {rewrites_total} rewrites, want at least {MIN_PARAPHRASE_REWRITES}")
    if total - rewrites_total < MIN_PARAPHRASE_NEW:
        problems.append(f"paraphrases: {total - rewrites_total} new questions, want at least {MIN_PARAPHRASE_NEW}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, nargs="?", default=DEFAULT_DIR, help=f"documents folder ({DEFAULT_DIR})")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--followups", type=Path, default=FOLLOWUPS)
    parser.add_argument("--unanswerable", type=Path, default=UNANSWERABLE)
    parser.add_argument("--paraphrases", type=Path, default=PARAPHRASES)
    args = parser.parse_args()
    absent = [doc.file for doc in DOCUMENTS.values() if not (args.docs / doc.file).is_file()]
    if absent:
        sys.exit(f"{args.docs} lacks {', '.join(absent)}: run python -m benchmarks.devset.documents --out {args.docs}")
    problems, coverage = check(args.docs, args.questions)
    for key, spots in coverage.items():
        extent = spots[0][1]
        unit = {"pdf": "pages", "epub": "chapters"}.get(DOCUMENTS[key].kind, "lines")
        print(f"{key:16} {len(spots):3} questions, evidence at {sorted(w for w, _ in spots)} of {extent} {unit}")
    follow_problems, follow_coverage = check_followups(args.docs, args.followups)
    per_doc = ", ".join(f"{key} {len(spots)}" for key, spots in follow_coverage.items())
    print(
        f"followups: {sum(len(s) for s in follow_coverage.values())} pairs with evidence found ({per_doc}), "
        f"{len(follow_problems)} problems"
    )
    unans_problems, kinds = check_unanswerable(args.docs, args.unanswerable)
    per_doc = ", ".join(f"{key} {k.get('absent', 0)}+{k.get('near-miss', 0)}" for key, k in kinds.items())
    print(
        f"unanswerable: {sum(sum(k.values()) for k in kinds.values())} questions "
        f"(absent+near-miss: {per_doc}), {len(unans_problems)} problems"
    )
    para_problems, para_counts = check_paraphrases(args.docs, args.paraphrases)
    per_doc = ", ".join(f"{key} {k.get('rewrite', 0)}+{k.get('new', 0)}" for key, k in para_counts.items())
    print(
        f"paraphrases: {sum(sum(k.values()) for k in para_counts.values())} questions "
        f"(rewrites+new: {per_doc}), {len(para_problems)} problems"
    )
    problems += follow_problems + unans_problems + para_problems
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"ok: {sum(len(s) for s in coverage.values())} questions, every evidence quote found where recorded")


if __name__ == "__main__":
    main()
