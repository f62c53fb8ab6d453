"""Options several commands share: the pot settings (`read`, and `ask` to say which stored pot answers) and the
answer settings (`ask`, `summarize`, `ask-across`), each read back into its config dataclass."""

from __future__ import annotations

import argparse
from dataclasses import replace

from infinipot.app.ask.modes import ANSWER_MODES, AnswerSettings
from infinipot.core.answer.evidence import RANKINGS, EvidenceConfig, parse_pot_entries
from infinipot.core.answer.grounded_answer import GROUNDING_STYLES
from infinipot.core.config import CAP_MODES, NUC_UNITS, PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.precision import DTYPES
from infinipot.core.scorers import METHODS

POT = PotConfig()
ANSWER = AnswerSettings()
DECODING = DecodingConfig()
EVIDENCE = EvidenceConfig()


def add_pot_options(parser: argparse.ArgumentParser, defaults_apply: bool = True) -> None:
    """|M|, |C|, method and the CaP/NuC settings. With defaults_apply=False (ask) every option defaults to None,
    so that naming none of them means "the latest general pot" rather than "the default settings"."""

    def default(value):
        return value if defaults_apply else None

    parser.add_argument(
        "--model", default="default", help="'default' (bundled SmolLM2-135M), a .gguf file, a model folder or hub id"
    )
    parser.add_argument(
        "--pot-size", type=int, default=default(POT.pot_size), help=f"|M|: most KV entries held ({POT.pot_size})"
    )
    parser.add_argument("--keep", type=int, default=None, help="|C|: entries kept per compression (default |M|/2)")
    parser.add_argument(
        "--method", default=default(POT.method), choices=METHODS, help="what decides which entries stay"
    )
    parser.add_argument(
        "--window-step", type=int, default=None, help="streaming/h2o: tokens read between evictions (|M|/16)"
    )
    parser.add_argument(
        "--nuc-ratio", type=float, default=default(POT.nuc_ratio), help="share of kept slots chosen by novelty"
    )
    parser.add_argument(
        "--nuc-unit",
        default=default(POT.nuc_unit),
        choices=NUC_UNITS,
        help="NuC per word given to its sentence (default), per word and its edge tokens, per word, per token",
    )
    parser.add_argument("--cap", default=default(POT.cap_mode), choices=CAP_MODES, help="catalyst: general or question")
    question_flag = "--question" if defaults_apply else "--cap-question"  # ask's question is its positional argument
    parser.add_argument(question_flag, dest="cap_question", default=None, help="the question, for --cap question")
    parser.add_argument("--no-cr-rope", action="store_true", help="ablation: keep original positions")


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """The float type the model runs in and the CPU threads it uses (read, ask, summarize, bench, ui)."""
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=DTYPES,
        help="what the model computes in: auto (default) is bfloat16 on a GPU and on CPUs that multiply bf16 "
        "natively (AMX, AVX512-BF16, Arm BF16), float32 elsewhere; a pot read in one dtype is not reused by another",
    )
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: one per physical core)")


POT_OPTIONS = ("pot_size", "keep", "method", "window_step", "nuc_ratio", "nuc_unit", "cap", "cap_question")


def pot_config(args: argparse.Namespace) -> PotConfig:
    """The pot settings the options name (PotConfig's defaults for those not given)."""
    return PotConfig(
        pot_size=POT.pot_size if args.pot_size is None else args.pot_size,
        keep_size=args.keep,
        nuc_ratio=POT.nuc_ratio if args.nuc_ratio is None else args.nuc_ratio,
        nuc_unit=args.nuc_unit or POT.nuc_unit,
        method=args.method or POT.method,
        cap_mode=args.cap or POT.cap_mode,
        question=args.cap_question,
        cr_rope=not args.no_cr_rope,
        window_step=args.window_step,
    )


def names_a_pot(args: argparse.Namespace) -> bool:
    """Whether `ask` was given any pot setting (or a model or a dtype): then that pot answers, not the latest one
    (which answers in the dtype it was read in)."""
    named = any(getattr(args, name) is not None for name in POT_OPTIONS)
    return args.no_cr_rope or args.model != "default" or args.dtype != "auto" or named


def add_decoding_options(parser: argparse.ArgumentParser, questions: bool = True) -> None:
    """The decoding flags; `questions` adds the one that applies only to answers to a question (--contrast)."""
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=DECODING.max_new_tokens,
        help=f"tokens ({DECODING.max_new_tokens})",
    )
    parser.add_argument(
        "--temperature", type=float, default=DECODING.temperature, help="0 (default): greedy; above 0: sample"
    )
    parser.add_argument("--top-p", type=float, default=DECODING.top_p, help="sampling: nucleus share (1.0: all)")
    parser.add_argument("--seed", type=int, default=DECODING.seed, help="sampling: the seed (same seed, same answer)")
    parser.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=DECODING.no_repeat_ngram,
        help=f"an n-gram of the answer's own tokens is not written twice (0: off; default {DECODING.no_repeat_ngram})",
    )
    parser.add_argument(
        "--allow-repeats", action="store_true", help="do not end the answer when it starts repeating a sentence"
    )
    parser.add_argument(
        "--copy-draft",
        type=int,
        default=DECODING.copy_draft,
        help="read each token with up to N next ones copied from the prompt (faster where the answer copies it; "
        f"in bfloat16 a near tie may fall otherwise); 0 off, up to 64 (default {DECODING.copy_draft})",
    )
    if not questions:
        return
    parser.add_argument(
        "--contrast",
        type=float,
        default=DECODING.contrast,
        help="answers to questions: favour what the document makes likelier over what the model would say without it: "
        f"0 off, up to 10 (default {DECODING.contrast:g})",
    )


def decoding_config(args: argparse.Namespace) -> DecodingConfig:
    return DecodingConfig(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        no_repeat_ngram=args.no_repeat_ngram,
        stop_on_repeat=not args.allow_repeats,
        contrast=getattr(args, "contrast", DECODING.contrast),
        copy_draft=args.copy_draft,
    )


def add_answer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--answer-from",
        default=None,
        choices=ANSWER_MODES,
        help=f"evidence: the pot plus the document passages it points to (default); pot: the pot alone; "
        f"focus: a copy distilled to --focus entries with the question (default {ANSWER.focus_entries})",
    )
    parser.add_argument("--focus", type=int, default=None, help="entries of the focused copy (implies focus mode)")
    parser.add_argument(
        "--evidence-tokens",
        type=int,
        default=EVIDENCE.budget_tokens,
        help=f"evidence: document tokens read into the answer's context ({EVIDENCE.budget_tokens})",
    )
    parser.add_argument(
        "--evidence-ranking",
        default=EVIDENCE.ranking,
        choices=RANKINGS,
        help="evidence: what finds the passages: the question's attention over the pot, the question's words in the "
        f"whole document, or both fused ({EVIDENCE.ranking})",
    )
    parser.add_argument(
        "--evidence-spans",
        type=int,
        default=EVIDENCE.read_spans,
        metavar="N",
        help="evidence: passages read, the N of the candidates after which the question is likeliest; 0 reads every "
        f"candidate ({EVIDENCE.read_spans})",
    )
    parser.add_argument(
        "--evidence-neighbours",
        type=int,
        default=EVIDENCE.neighbour_sentences,
        metavar="N",
        help="evidence: whole sentences each passage read takes on each side (more passages hold the answer; "
        f"0 answers ~2-3 s sooner on a 2-core CPU) ({EVIDENCE.neighbour_sentences})",
    )
    parser.add_argument(
        "--evidence-pot",
        default="all" if EVIDENCE.pot_entries is None else str(EVIDENCE.pot_entries),
        metavar="N|all",
        help="evidence: pot entries the passages are read after: 0 the passages alone (the template's opening "
        "only), all the whole pot, N a copy distilled to N entries with the question "
        f"({'all' if EVIDENCE.pot_entries is None else EVIDENCE.pot_entries})",
    )
    parser.add_argument(
        "--grounding",
        default=ANSWER.grounding.style,
        choices=GROUNDING_STYLES,
        help="evidence: checked: the passages' sentence likeliest to hold the answer when it is likely enough, else "
        "'no direct answer found' with that sentence as the closest passage; sentence: always the judge's best "
        f"sentence; free: the model's own answer, unchecked ({ANSWER.grounding.style})",
    )
    add_decoding_options(parser)


def answer_settings(args: argparse.Namespace) -> AnswerSettings:
    answer_from = args.answer_from or ("focus" if args.focus is not None else ANSWER.answer_from)
    return AnswerSettings(
        answer_from=answer_from,
        focus_entries=ANSWER.focus_entries if args.focus is None else args.focus,
        decoding=decoding_config(args),
        evidence=EvidenceConfig(
            budget_tokens=args.evidence_tokens,
            ranking=args.evidence_ranking,
            pot_entries=parse_pot_entries(args.evidence_pot),
            read_spans=args.evidence_spans,
            neighbour_sentences=args.evidence_neighbours,
        ),
        grounding=replace(ANSWER.grounding, style=args.grounding),
    )
