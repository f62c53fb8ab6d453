"""Options several commands share: the pot settings (`read`, and `ask` to say which stored pot answers) and the
answer settings (`ask`, `summarize`, `ask-across`), each read back into its config dataclass."""

from __future__ import annotations

import argparse
from dataclasses import fields, replace

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

    def option(field: str, kind: type, help: str) -> None:
        """The option that sets DecodingConfig's `field`, named after it and defaulting to its value there."""
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind, default=getattr(DECODING, field), help=help)

    option("max_new_tokens", int, f"tokens ({DECODING.max_new_tokens})")
    option("temperature", float, "0 (default): greedy; above 0: sample")
    option("top_p", float, "sampling: nucleus share (1.0: all)")
    option("seed", int, "sampling: the seed (same seed, same answer)")
    option(
        "no_repeat_ngram",
        int,
        f"an n-gram of the answer's own tokens is not written twice (0: off; default {DECODING.no_repeat_ngram})",
    )
    parser.add_argument(
        "--allow-repeats", action="store_true", help="do not end the answer when it starts repeating a sentence"
    )
    option(
        "copy_draft",
        int,
        "read each token with up to N next ones copied from the prompt (faster where the answer copies it; "
        f"in bfloat16 a near tie may fall otherwise); 0 off, up to 64 (default {DECODING.copy_draft})",
    )
    if questions:
        option(
            "contrast",
            float,
            "answers to questions: favour what the document makes likelier over what the model would say without "
            f"it: 0 off, up to 10 (default {DECODING.contrast:g})",
        )


def decoding_config(args: argparse.Namespace) -> DecodingConfig:
    """Each decoding option sets the field of its name; --allow-repeats turns stop_on_repeat off, and a command
    without --contrast keeps its default."""
    given = {field.name: getattr(args, field.name) for field in fields(DecodingConfig) if hasattr(args, field.name)}
    return DecodingConfig(**given, stop_on_repeat=not args.allow_repeats)


def add_answer_options(parser: argparse.ArgumentParser) -> None:
    def evidence_option(flag: str, default: object, help: str, **how) -> None:
        """An option of evidence answers: its help says so and ends with its default."""
        parser.add_argument(flag, default=default, help=f"evidence: {help} ({default})", **how)

    parser.add_argument(
        "--answer-from",
        default=None,
        choices=ANSWER_MODES,
        help=f"evidence: the pot plus the document passages it points to (default); pot: the pot alone; "
        f"focus: a copy distilled to --focus entries with the question (default {ANSWER.focus_entries})",
    )
    parser.add_argument("--focus", type=int, default=None, help="entries of the focused copy (implies focus mode)")
    evidence_option(
        "--evidence-tokens", EVIDENCE.budget_tokens, "document tokens read into the answer's context", type=int
    )
    evidence_option(
        "--evidence-ranking",
        EVIDENCE.ranking,
        "what finds the passages: the question's attention over the pot, the question's words in the whole "
        "document, or both fused",
        choices=RANKINGS,
    )
    evidence_option(
        "--evidence-spans",
        EVIDENCE.read_spans,
        "passages read, the N of the candidates after which the question is likeliest; 0 reads every candidate",
        type=int,
        metavar="N",
    )
    evidence_option(
        "--evidence-neighbours",
        EVIDENCE.neighbour_sentences,
        "whole sentences each passage read takes on each side (more passages hold the answer; 0 answers ~2-3 s "
        "sooner on a 2-core CPU)",
        type=int,
        metavar="N",
    )
    evidence_option(
        "--evidence-pot",
        "all" if EVIDENCE.pot_entries is None else str(EVIDENCE.pot_entries),
        "pot entries the passages are read after: 0 the passages alone (the template's opening only), all the "
        "whole pot, N a copy distilled to N entries with the question",
        metavar="N|all",
    )
    evidence_option(
        "--grounding",
        ANSWER.grounding.style,
        "checked: the passages' sentence likeliest to hold the answer when it is likely enough, else 'no direct "
        "answer found' with that sentence as the closest passage; sentence: always the judge's best sentence; "
        "free: the model's own answer, unchecked",
        choices=GROUNDING_STYLES,
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
