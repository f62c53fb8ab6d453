"""Helpers shared by the test modules: polling, the CLI in-process, the app's workspace and server, citation PDFs,
growing logs, and instrumentation of the engine. The tiny models and tokenizer are built in tiny_models.py."""

from __future__ import annotations

import functools
import importlib.util
import json
import random
import re
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import torch
from tiny_models import tiny_tokenizer

from infinipot.app.cli import main
from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig


# -- waiting -----------------------------------------------------------------------------------------------
def wait_until(condition, timeout: float = 120.0, every: float = 0.2, what: str = "", ignore=()):
    """Call condition() every `every` s until it returns a true value, and return that value.

    Exceptions of the types in `ignore` count as "not yet" (a page still rendering). After `timeout` s the test
    fails, naming what it waited for and the last value seen. The timeout is a bound for a loaded machine, not
    a measurement.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = condition()
        except ignore as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what or 'the condition'}; last value: {last!r}")
        time.sleep(every)


def wait_until_stable(read, settle: float, timeout: float = 120.0, every: float = 0.1, what: str = "", ignore=()):
    """Poll read() until its value has not changed for `settle` s, and return that value."""
    state = {"value": object(), "since": time.monotonic()}

    def settled():
        value = read()
        if value != state["value"]:
            state["value"], state["since"] = value, time.monotonic()
        return time.monotonic() - state["since"] >= settle

    wait_until(settled, timeout, every, what or f"a value unchanged for {settle:g} s", ignore)
    return state["value"]


# -- the `infinipot` command in-process ---------------------------------------------------------------------
def run_json(capsys, argv) -> dict:
    """Run the command, which must succeed, and return the JSON object on the last line of its output."""
    return run_json_and_stderr(capsys, argv)[0]


def run_json_and_stderr(capsys, argv) -> tuple[dict, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def expect_one_line_error(capsys, argv, fragment):
    """The command exits 2 with one `infinipot: error:` line on stderr that mentions `fragment`, no traceback."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("infinipot: error:"), err
    assert fragment in lines[0].lower()
    assert "Traceback" not in err


# -- the app: a workspace whose reads can be slowed, a running server ---------------------------------------
QUESTIONS = [
    "What does the fox do?",
    "Which number comes first?",
    "Who is lazy?",
    "What is the passkey?",
    "Summarize line three.",
]


def tiny_settings(model_dir: str, pot_size: int = 128, keep_size: int = 48) -> dict:
    return {
        "model": model_dir,
        "pot_size": pot_size,
        "keep_size": keep_size,
        "nuc_ratio": 0.5,
        "cap_mode": "general",
        "question": "",
        "method": "infinipot",
        "nuc_unit": "sentence",
        "checkpoint_seconds": 60.0,
        "dtype": "auto",
    }


def answer_args(**changes) -> list:
    """The Settings tab's answer values in the order the page passes them (handlers.ANSWER_NAMES): the defaults
    (web.settings.AnswerChoices) with `changes`."""
    from dataclasses import asdict

    from infinipot.app.web.page.handlers import ANSWER_NAMES
    from infinipot.app.web.settings import AnswerChoices

    values = {**asdict(AnswerChoices()), **changes}
    assert set(values) == set(ANSWER_NAMES), sorted(set(values) ^ set(ANSWER_NAMES))
    return [values[name] for name in ANSWER_NAMES]


def _always_writing(settings):
    """Answer settings whose checked answer always runs its writer (every confidence in the writer's band), on any
    model (the tiny ones included: the calibrated decision, not the strict one for models it was not fitted on)."""
    from dataclasses import replace

    from infinipot.app.ask.modes import AnswerSettings

    settings = settings or AnswerSettings()
    confidence = replace(settings.grounding.confidence, sure=1.0, unsure=0.0, fitted_on=None)
    return replace(settings, grounding=replace(settings.grounding, confidence=confidence))


def make_workspace(home: Path, pace: float = 0.0):
    """The app's workspace on `home`, 1 MB upload limit, whose service sleeps `pace` s after every reader step,
    `service.answer_pace` s before every piece of an answer or a summary and `service.tail_pace` s after its last
    one (`service.pieces_done` is then set), so a test can watch a read, an answer or a summary and stop it."""
    from infinipot.app.service import DocumentService
    from infinipot.app.web.jobs import ReadQueue
    from infinipot.app.web.workspace import Workspace

    class PacedService(DocumentService):
        answer_pace = 0.0
        tail_pace = 0.0  # after an answer's or a summary's last piece: its sources (or note) come this much later
        pieces_done = threading.Event()  # set when an answer or summary gave its last piece (a test clears it)
        # Before an answer's search, and after each of its stages (ask.progress.AskStage), this many seconds.
        stage_pace = 0.0
        always_write = False  # the checked answer's writer runs for every question (its confidence always in doubt)

        def read(
            self,
            path,
            config,
            model_name="default",
            on_progress=None,
            follow=False,
            checkpoint_seconds=None,
            dtype=None,
        ):
            def paced(pot):
                if on_progress is not None:
                    on_progress(pot)
                time.sleep(pace)

            return super().read(path, config, model_name, paced, follow, checkpoint_seconds, dtype)

        def asking(self, doc, question, settings=None, *args, **kwargs):
            if self.always_write:
                settings = _always_writing(settings)
            return super().asking(doc, question, settings, *args, **kwargs)

        def answer_steps(self, *args):
            # Paced inside the service's stream, as a slow model would be: what is stored is what was given.
            return _paced_steps(self, super().answer_steps(*args))

        def summarize(self, *args, on_part=None, **kwargs):
            def paced_part(k, n):
                if on_part is not None:
                    on_part(k, n)
                time.sleep(self.answer_pace)

            pieces, stats = super().summarize(*args, on_part=paced_part, **kwargs)
            return self._paced(pieces), stats

        def _paced(self, pieces, done=True):
            for piece in pieces:
                # A checked answer or an outline summary comes as one piece; streamed a few words at a time it has
                # a middle to stop in, as a written answer has, instead of a race with pieces_done.
                for words in _few_words_at_a_time(piece):
                    time.sleep(self.answer_pace)
                    yield words
            if done:
                self._done()

        def _done(self):
            self.pieces_done.set()
            time.sleep(self.tail_pace)

    service = PacedService(home, device="cpu")
    return Workspace(service, ReadQueue(service), max_upload_bytes=1 << 20)


def _paced_steps(service, steps):
    """An answer's steps (ask.pipeline.answer_steps) at the service's pace: the search takes `stage_pace`, as does
    each stage, and each piece comes a few words at a time, `answer_pace` before each."""
    from infinipot.app.ask.events import Piece
    from infinipot.app.ask.progress import AskStage

    time.sleep(service.stage_pace)
    for step in steps:
        if isinstance(step, AskStage):
            yield step
            time.sleep(service.stage_pace)
            continue
        for words in service._paced([step.text], done=False):
            yield Piece(words)
    service._done()


def _few_words_at_a_time(piece: str, words: int = 4) -> list[str]:
    """`piece` cut after every `words` words; joined they are `piece` again."""
    runs = re.findall(r"\s*\S+\s*", piece) or [piece]
    return ["".join(runs[start : start + words]) for start in range(0, len(runs), words)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_app(workspace, refresh_seconds: float = 0.5):
    """Serve the app on a free loopback port; yields its URL."""
    from infinipot.app.web.page import serve, stop_serving

    port = free_port()
    blocks = serve(workspace, "127.0.0.1", port, block=False, quiet=True, refresh_seconds=refresh_seconds)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        stop_serving(blocks)
        workspace.close()


def message_text(message: dict) -> str:
    """A chatbot message's text, whether gradio gives it as a string or as a list of parts."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def answer_text(message: dict) -> str:
    """A chatbot message's text without the Sources line the app adds under an answer (app/ui/sources.py)."""
    return message_text(message).partition("\n\n*Sources: ")[0]


# -- citation documents: small PDFs with a needle on a known page --------------------------------------------
_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest" / "make_fixtures.py"

NEEDLE_TOKEN = tiny_tokenizer().convert_tokens_to_ids("\u0120passkey")  # " passkey": one token of the tiny BPE
FILLER = "Grass is green, the sky is blue, the sun is yellow. Here we go, there and back again. " * 40


@functools.cache
def fixture_builders():
    """tests/fixtures/ingest/make_fixtures.py, the builders of the ingest fixtures (a PDF writer among them)."""
    spec = importlib.util.spec_from_file_location("ingest_make_fixtures", _FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF whose page i shows the lines pages[i]."""
    path.write_bytes(fixture_builders().pdf_bytes(pages))
    return path


def wrap(words: list[str], per_line: int = 12) -> list[str]:
    return [" ".join(words[i : i + per_line]) for i in range(0, len(words), per_line)]


def filler_pages(text: str, pages: int, words_per_page: int) -> list[list[str]]:
    """`pages` pages of consecutive words of `text` (repeated when short), as ASCII lines (Helvetica, cp1252)."""
    words = re.sub(r"[^\x20-\x7e]", " ", text).split()
    needed = pages * words_per_page
    words = (words * (needed // max(1, len(words)) + 1))[:needed]
    return [wrap(words[i * words_per_page : (i + 1) * words_per_page]) for i in range(pages)]


def plant_needle(pages: list[list[str]], page: int, sentence: str, seed: int = 0) -> list[list[str]]:
    """The pages with `sentence` as its own line between two lines of 1-based `page`."""
    planted = [list(lines) for lines in pages]
    lines = planted[page - 1]
    lines.insert(random.Random(seed).randint(1, max(1, len(lines) - 1)), sentence)
    return planted


# -- growing logs ------------------------------------------------------------------------------------------
# The stream is cut every max(forward_tokens, 256) tokens; appends of whole chunks end where a one-go read cuts.
LOG_CONFIG = PotConfig(pot_size=128, keep_size=48, forward_tokens=256)
LOG_CHUNK = 256


def line_tokens(line: str) -> int:
    return len(tiny_tokenizer()(line, add_special_tokens=False)["input_ids"])  # each line is encoded alone


def log_lines(total_tokens: int, start: int) -> list[str]:
    """Log lines worth exactly `total_tokens` tokens, so a step ends where a one-go read cuts its stream."""
    lines, count, i = [], 0, start
    while total_tokens - count > 40:
        line = f"{i:05d} worker-{i % 7} handled request {i * 31 % 997} for the quick brown fox.\n"
        lines.append(line)
        count += line_tokens(line)
        i += 1
    assert 0 < total_tokens - count <= 40
    blank = "\n"  # encoded alone, a blank line is one token: pads the step to the exact count
    return [*lines, *[blank] * (total_tokens - count)]


# -- the engine: independent references and instrumentation -------------------------------------------------
def reference_greedy(engine, ids: list[int], max_new_tokens: int) -> list[int]:
    """Plain full-KV greedy generation with transformers over the same token ids."""
    with torch.no_grad():
        out = engine.model.generate(
            torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=sorted(engine.stop_ids)
        )
    generated = out[0, len(ids) :].tolist()
    for i, token in enumerate(generated):
        if token in engine.stop_ids:
            return generated[:i]
    return generated


def record_cache_lengths(model) -> list[int]:
    """Independent instrumentation: the cache length after every forward of the decoder."""
    lengths: list[int] = []

    def hook(_module, _args, kwargs, _output):
        lengths.append(hf_adapter.cache_length(kwargs["past_key_values"]))

    hf_adapter.decoder(model).register_forward_hook(hook, with_kwargs=True)
    return lengths


def assert_same_pot(a, b):
    """Two in-memory pots are equal: counters and every tensor, bit for bit."""
    assert a.counters() == b.counters()
    ours, theirs = a.tensors(), b.tensors()
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert torch.equal(ours[name], theirs[name]), name


def checked_verdict(check):
    """The verdict a core check (core.answer.grounded_answer.checking) returns, its steps run through."""
    while True:
        try:
            next(check)
        except StopIteration as done:
            return done.value


def fake_check(monkeypatch, decide) -> None:
    """The answer's check (app.ask.pipeline's checking and final_answer) replaced, and made for every answer (a
    tiny pot may leave no room for passages): `decide(engine, question, passages, **what the check is given)`
    returns its (Verdict, answer)."""
    from infinipot.app.ask import pipeline

    said: list[str] = []

    def checking(engine, pot, question, passages, decoding, stats, config, **kwargs):
        yield from ()  # a check that never writes
        verdict, text = decide(engine, question, passages, **kwargs)
        said[:] = [text]
        return verdict

    monkeypatch.setattr(pipeline, "answers_freely", lambda read, grounding: False)
    monkeypatch.setattr(pipeline, "checking", checking)
    monkeypatch.setattr(pipeline, "final_answer", lambda engine, verdict, *args: (verdict, said[0]))
