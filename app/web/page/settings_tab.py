"""The Settings tab's fields, declared once as data and built by one function: what most people change in plain
words first, then a closed Advanced part with the rest and the method's terms in the small print."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

# The method's terms, each said once, in the Advanced part (docs/method.md says more).
GLOSSARY = """**The method's terms** (the InfiniPot paper; docs/method.md explains each in full)
- **Memory pot** (size **|M|**, "Memory size" above): the model's fixed-size memory of the document, its key-value
  (KV) cache; each token it keeps is one *entry* per layer and KV head.
- **|C|**: the entries kept each time the pot is full and is compressed (Continual Context Distillation).
- **NuC** (novelty under compression): tokens kept because they surprised the model.
- **CaP** (catalyst prompt): tokens kept because a summary request (CaP-G) or your question (CaP-Q) attends to them.
- **KV head** (a *group* in "What the model kept"): one of the model's groups of attention heads; each keeps its
  own entries.
- **Evidence**: the passages of the document the pot's attention and the question's words point to, read again
  word for word to answer."""

READ, ANSWER = "read", "answer"  # whose defaults give a field's value: the next reads' or the next answers'


@dataclass(frozen=True)
class Field:
    name: str  # the component's name on the page (and its value's key in its defaults)
    kind: str  # a key of COMPONENTS
    label: str
    info: str = ""
    values: str | None = None  # READ or ANSWER: whose defaults hold its first value
    value: object = None  # its first value when `values` is None
    choices: str | None = None  # the key of its choices in the workspace's setting choices
    whole: bool = False  # a whole number
    steps: tuple[float, float, float] | None = None  # a slider's minimum, maximum and step
    minimum: float | None = None
    elem_id: str | None = None


COMPONENTS = {
    "number": gr.Number,
    "slider": gr.Slider,
    "dropdown": gr.Dropdown,
    "radio": gr.Radio,
    "checkbox": gr.Checkbox,
    "textbox": gr.Textbox,
}

MODEL = Field(
    "model",
    "textbox",
    "Model: 'default' (bundled SmolLM2-135M), a .gguf file, a local folder, or a hub id",
    value="default",
    elem_id="ip-model",
)
# What most people change: rows of fields, in the order shown.
COMMON = (
    (
        Field(
            "pot_size",
            "number",
            "Memory size: tokens of the document the model keeps in mind at once",
            "more remembers more of a long document, and reads and answers slower",
            READ,
            whole=True,
            elem_id="ip-pot-size",
        ),
        Field(
            "max_new_tokens",
            "slider",
            "Answer length (tokens, about 3/4 of a word each)",
            "the longest an answer or summary may be",
            ANSWER,
            steps=(8, 1024, 8),
            elem_id="ip-answer-length",
        ),
    ),
    (
        Field(
            "answer_from",
            "radio",
            "Answer from",
            "the first (default) reads the passages the model's memory points to, word for word",
            ANSWER,
            choices="answer_modes",
            elem_id="ip-answer-from",
        ),
    ),
    (
        Field(
            "temperature",
            "slider",
            "Randomness",
            "0: always the most likely word (the same answer every time)",
            ANSWER,
            steps=(0, 2, 0.05),
            elem_id="ip-temperature",
        ),
        Field(
            "stop_on_repeat",
            "checkbox",
            "Stop when the answer repeats itself",
            "ends the answer before a sentence or line it already wrote, a run-on chain of characters, or a new "
            "paragraph that asks a question of its own",
            ANSWER,
            elem_id="ip-stop-on-repeat",
        ),
    ),
)
# How documents are read (Advanced).
READING = (
    (
        Field(
            "keep_size",
            "number",
            "Tokens kept each time the memory is full",
            "the compressed size, |C|",
            READ,
            whole=True,
            elem_id="ip-keep-size",
        ),
        Field(
            "nuc_ratio",
            "slider",
            "Share kept because it surprised the model",
            "the rest is kept because a summary looks at it · NuC ratio α",
            READ,
            steps=(0, 1, 0.05),
        ),
        Field(
            "nuc_unit",
            "dropdown",
            "Surprise is measured per",
            "a token gets its sentence's, its word's (with edges) or its own novelty · NuC unit",
            READ,
            choices="nuc_units",
        ),
    ),
    (
        Field(
            "cap_mode",
            "radio",
            "What decides importance while reading",
            "general: a summary request · question: your question below · CaP mode",
            READ,
            choices="cap_modes",
        ),
        Field("cap_question", "textbox", "Question to read for (with 'question')"),
        Field(
            "method",
            "dropdown",
            "Method",
            "infinipot; the others are baselines for comparisons",
            READ,
            choices="methods",
        ),
    ),
    (
        Field(
            "checkpoint_seconds",
            "number",
            "Save a resume point every ... seconds of reading (a crash loses at most this much; 0: after every piece)",
            values=READ,
            minimum=0,
            elem_id="ip-checkpoint-seconds",
        ),
        Field(
            "dtype",
            "dropdown",
            "Number precision",
            "auto: bfloat16 where the processor computes it natively (reads about twice as fast), float32 "
            "elsewhere · a document read in one is read again for another",
            READ,
            choices="dtypes",
            elem_id="ip-dtype",
        ),
    ),
)
# How answers are made (Advanced): the paper's and the decoder's terms in the small print.
ANSWERING = (
    (
        Field(
            "evidence_tokens",
            "number",
            "Passages found for an answer (tokens)",
            "evidence budget: document tokens of the candidate passages (up to 12), of which the best are read",
            ANSWER,
            whole=True,
            elem_id="ip-evidence-tokens",
        ),
        Field(
            "evidence_ranking",
            "dropdown",
            "Passages found by",
            "both: the pot's attention and the question's words in the whole document, fused (default) · "
            "attention: only where the pot looks · words: only the question's words",
            ANSWER,
            choices="answer_rankings",
            elem_id="ip-evidence-ranking",
        ),
        Field(
            "evidence_pot",
            "textbox",
            "Passages read after (pot entries)",
            "0: the passages on their own, the pot only finds them (default; the small model reads them best so) · "
            "all: after the whole pot · a number: after a copy of the pot distilled to that many entries with the "
            "question",
            ANSWER,
            elem_id="ip-evidence-pot",
        ),
        Field(
            "evidence_spans",
            "number",
            "Passages read (the best of those found)",
            "the passages found are ranked by how likely the question is after each one alone, and only this many "
            "are read (a small model reads a few best) · 0: every passage found",
            ANSWER,
            whole=True,
            elem_id="ip-evidence-spans",
        ),
    ),
    (
        Field(
            "focus_entries",
            "number",
            "Size of the question-focused copy (entries)",
            "focus mode: entries kept when the pot is distilled with the question (CaP-Q at answer time)",
            ANSWER,
            whole=True,
            elem_id="ip-focus-entries",
        ),
        Field(
            "top_p",
            "slider",
            "Words considered",
            "top-p (nucleus): only the likeliest words whose chances add up to this; with randomness only",
            ANSWER,
            steps=(0.05, 1, 0.05),
            elem_id="ip-top-p",
        ),
        Field(
            "seed",
            "number",
            "Seed",
            "with randomness: the same seed gives the same answer again",
            ANSWER,
            whole=True,
            elem_id="ip-seed",
        ),
        Field(
            "contrast",
            "slider",
            "Stick to the document",
            "contrast: each word is chosen for how much likelier the document makes it than the model's answer "
            "without the document; questions only, not summaries · 0: off (default)",
            ANSWER,
            steps=(0, 2, 0.05),
            elem_id="ip-contrast",
        ),
    ),
)


def component(field: Field, defaults: dict[str, dict], choices: dict):
    """The Gradio component of `field`; `defaults`: {READ: the next reads' values, ANSWER: the next answers'}."""
    kwargs: dict = {"label": field.label}
    if field.info:
        kwargs["info"] = field.info
    if field.elem_id:
        kwargs["elem_id"] = field.elem_id
    if field.values is not None:
        kwargs["value"] = defaults[field.values][field.name]
    elif field.value is not None:
        kwargs["value"] = field.value
    if field.choices:
        kwargs["choices"] = choices[field.choices]
    if field.whole:
        kwargs["precision"] = 0
    if field.steps:
        kwargs["minimum"], kwargs["maximum"], kwargs["step"] = field.steps
    if field.minimum is not None:
        kwargs["minimum"] = field.minimum
    return COMPONENTS[field.kind](**kwargs)


def rows(c, fields: tuple[tuple[Field, ...], ...], defaults: dict[str, dict], choices: dict) -> None:
    """Each row of fields side by side (a row of one is laid out alone), each component set on `c` by its name."""
    for row in fields:
        if len(row) == 1:
            setattr(c, row[0].name, component(row[0], defaults, choices))
            continue
        with gr.Row():
            for field in row:
                setattr(c, field.name, component(field, defaults, choices))


def layout(c, choices: dict) -> None:
    """The Settings tab (inside its gr.Tab), its components set on `c`."""
    defaults = {READ: choices["defaults"], ANSWER: choices["answer_defaults"]}
    gr.Markdown("Settings for the next uploads (a read already queued keeps its settings) and the next answers.")
    c.model = component(MODEL, defaults, choices)
    rows(c, COMMON, defaults, choices)
    c.settings_notice = gr.Markdown(elem_id="ip-settings-notice")
    c.answers_notice = gr.Markdown(elem_id="ip-answers-notice")
    with gr.Accordion("Advanced: how documents are read and answered", open=False, elem_id="ip-advanced"):
        gr.Markdown(GLOSSARY)
        rows(c, READING, defaults, choices)
        with gr.Group(elem_id="ip-answers"):
            rows(c, ANSWERING, defaults, choices)
