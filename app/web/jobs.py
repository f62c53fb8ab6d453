"""The read queue: one background worker reads documents one at a time, with live progress and Cancel.

A read is queued, then its tokens are counted (which also stores the token ids the visualization shows),
then it is read through the service. Progress comes from the reader's on_step callback, which runs after
every forward piece; Cancel sets a flag that on_step turns into a Cancelled exception, so a read stops
between two chunks and the service keeps its last checkpoint. Nothing here touches the model directly.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from infinipot.app.errors import USER_ERRORS, one_line
from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.core.pot import Pot

log = logging.getLogger(__name__)

QUEUED, COUNTING, READING, DONE, FAILED, CANCELLED = "queued", "counting", "reading", "done", "failed", "cancelled"
ACTIVE = (QUEUED, COUNTING, READING)


class Cancelled(Exception):
    """Raised from the reader's on_step (or the token count's progress) when the user cancels a read."""


@dataclass(frozen=True)
class ReadRequest:
    doc_id: str
    name: str
    path: Path
    config: PotConfig
    model: str = "default"
    pages: int | None = None
    # False for a question-aware re-read: the memory view keeps showing the document's general read.
    keeps_read_log: bool = True
    # Seconds of reading between resume points (Settings); None: the service's default.
    checkpoint_seconds: float | None = None
    # What the model computes in (Settings, core.precision); None: the service's default.
    dtype: str | None = None


class MemoryLog:
    """Samples of the pot taken as it is read, thinned by halves so that at most `limit` are kept."""

    def __init__(self, limit: int = 400) -> None:
        if limit < 2:
            raise ValueError(f"a memory log needs room for at least 2 samples, got {limit}")
        self.limit = limit
        self.samples: list[dict] = []
        self._stride = 1
        self._seen = 0

    def add(self, pot: Pot, process: psutil.Process) -> None:
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        nbytes = pot.nbytes()
        per_position = nbytes / max(pot.entries, 1)  # keys and values of every layer and head
        self.samples.append(
            {
                "tokens": pot.document_tokens,
                "entries": pot.entries,
                "pot_bytes": nbytes,
                "full_kv_bytes": round(per_position * pot.tokens_read),
                "rss_bytes": process.memory_info().rss,
            }
        )
        if len(self.samples) > self.limit:
            self.samples = self.samples[::2]
            self._stride *= 2


@dataclass
class ReadJob:
    id: int
    request: ReadRequest
    status: str = QUEUED
    error: str | None = None
    tokens_counted: int = 0
    tokens_total: int | None = None
    tokens_read: int = 0
    cycles: int = 0
    entries: int = 0
    reading_since: float | None = None
    finished_at: float | None = None
    report: dict | None = None
    memory: MemoryLog = field(default_factory=MemoryLog)
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    resumed_at: int = 0  # document tokens a resumed read started from
    # (time, tokens read) at the read's first step: the rate for the ETA is measured from there, since the first
    # step also waits for the model and fills the empty pot, and an ETA from it jumps by minutes.
    first_step: tuple[float, int] | None = None
    # (time, tokens read) at its latest step: the rate is measured up to there, not up to now, since tokens come a
    # piece at a time (1,024 every 20 s on a busy CPU) and a rate up to now fell between pieces (ETA 1:01 to 2:01).
    last_step: tuple[float, int] | None = None
    file_bytes: int = 0  # the file's size: how long a document not yet counted is, from its size

    def snapshot(self, now: float | None = None) -> dict:
        """Plain numbers for the UI: tokens read of total, cycles, tokens per second, ETA."""
        now = time.monotonic() if now is None else now
        end = self.finished_at or now
        elapsed = end - self.reading_since if self.reading_since is not None else 0.0
        done_here = self.tokens_read - self.resumed_at  # the rate counts what this read did, not the resume point
        rate = done_here / elapsed if elapsed > 0 and done_here > 0 else None
        total = self.tokens_total
        fraction = min(1.0, self.tokens_read / total) if total else 0.0
        if self.status == DONE:
            fraction = 1.0
        eta = None
        if total and self.status == READING and (rate_now := step_rate(self.first_step, self.last_step)):
            eta = countdown((total - self.tokens_read) / rate_now, self.last_step[0], now)
        return {
            "job_id": self.id,
            "doc_id": self.request.doc_id,
            "name": self.request.name,
            "status": self.status,
            "error": self.error,
            "tokens_counted": self.tokens_counted,
            "tokens_read": self.tokens_read,
            "tokens_total": total,
            "fraction": fraction,
            "cycles": self.cycles,
            "entries": self.entries,
            "pot_size": self.request.config.pot_size,
            "tokens_per_second": rate,
            "eta_seconds": eta,
            "elapsed_seconds": elapsed,
            "reused": bool(self.report and self.report.get("reused")),
            "resumed_from": (self.report or {}).get("resumed_from", 0),  # tokens a checkpoint saved re-reading
            "warnings": list((self.report or {}).get("warnings", [])),  # a duplicate's note, a re-read damaged pot
            "first_step": self.first_step,
            "last_step": self.last_step,
            "resumed_at": self.resumed_at,
            "file_bytes": self.file_bytes,
        }


def step_rate(first: tuple[float, int] | None, last: tuple[float, int] | None) -> float | None:
    """Tokens per second between two steps' (time, tokens read); None before a second step."""
    if first is None or last is None or last[0] <= first[0] or last[1] <= first[1]:
        return None
    return (last[1] - first[1]) / (last[0] - first[0])


def countdown(seconds_at_step: float, step_at: float, now: float) -> float:
    """The seconds left that a step measured, counted down since: the ETA falls a second a second between steps
    and is measured again at each one (at least 1 s while a read still goes on)."""
    return max(seconds_at_step - (now - step_at), 1.0)


def folder_seconds_left(batch: list[dict], now: float) -> float | None:
    """Seconds left of a batch of reads (a folder): the tokens left in all its documents at the batch's own speed,
    the tokens it read from its first step to its latest over the seconds between (so the counting, saving and first
    steps of the documents after the first are in it), counted down since its latest step. A document not yet
    counted is as long as its size says at the tokens per byte of those counted (of its own kind of file when one
    is), or as their mean. None before two steps or when nothing is left to read.

    Never one document's rate up to now: that swung between 2 min 41 s and 5 min 22 s every second, since tokens
    arrive a piece at a time and the rate up to now falls between pieces."""
    active = [job for job in batch if job["status"] in ACTIVE]
    stepped = [job for job in batch if job.get("first_step") and job.get("last_step")]
    if not active or not stepped:
        return None
    first = min(stepped, key=lambda job: job["first_step"][0])
    latest = max(job["last_step"][0] for job in stepped)
    # Every token read since the first step: the later documents' first steps too, whose time is in the span.
    tokens = sum(job["last_step"][1] - job["resumed_at"] for job in stepped) - (
        first["first_step"][1] - first["resumed_at"]
    )
    if latest <= first["first_step"][0] or tokens <= 0:
        return None
    left = sum(_tokens_left(job, batch) for job in active)
    return countdown(left / (tokens / (latest - first["first_step"][0])), latest, now) if left else None


def _tokens_left(job: dict, batch: list[dict]) -> float:
    if job.get("tokens_total"):
        return max(0, job["tokens_total"] - job["tokens_read"])
    counted = [other for other in batch if other.get("tokens_total") and other.get("file_bytes")]
    alike = [other for other in counted if Path(other["name"]).suffix == Path(job["name"]).suffix] or counted
    if alike and job.get("file_bytes"):
        return job["file_bytes"] * sum(o["tokens_total"] for o in alike) / sum(o["file_bytes"] for o in alike)
    known = [other["tokens_total"] for other in batch if other.get("tokens_total")]
    return sum(known) / len(known) if known else 0.0


class ReadQueue:
    """Single worker, first come first served; the worker thread starts with the first submitted read."""

    def __init__(self, service: DocumentService, memory_samples: int = 400) -> None:
        self.service = service
        self.memory_samples = memory_samples
        self._jobs: list[ReadJob] = []
        self._lock = threading.Lock()
        self._pending: queue.Queue[ReadJob | None] = queue.Queue()
        self._ids = itertools.count(1)
        self._batch_from = 1  # the first job submitted since the queue was last idle: one library read
        self._worker: threading.Thread | None = None
        self._process = psutil.Process()

    def submit(self, request: ReadRequest) -> ReadJob:
        with self._lock:
            if self._active(request.doc_id) is not None:
                raise ValueError(f"{request.name} is already queued or being read")
            job = ReadJob(
                next(self._ids), request, memory=MemoryLog(self.memory_samples), file_bytes=_size(request.path)
            )
            if not any(other.status in ACTIVE for other in self._jobs):
                self._batch_from = job.id
            self._jobs.append(job)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="infinipot-reader", daemon=True)
                self._worker.start()
        self._pending.put(job)
        return job

    def cancel(self, doc_id: str) -> ReadJob | None:
        """Stop a document's read: a queued one never starts, a running one stops after its current chunk."""
        with self._lock:
            job = self._active(doc_id)
            if job is None:
                return None
            job.cancel_requested.set()
            if job.status == QUEUED:
                job.status = CANCELLED
                job.finished_at = time.monotonic()
        return job

    def latest(self, doc_id: str) -> ReadJob | None:
        with self._lock:
            return next((job for job in reversed(self._jobs) if job.request.doc_id == doc_id), None)

    def forget(self, doc_id: str) -> None:
        """Drop a document's finished jobs (after it is deleted)."""
        with self._lock:
            self._jobs = [job for job in self._jobs if job.request.doc_id != doc_id or job.status in ACTIVE]

    def snapshots(self) -> list[dict]:
        """The latest job of every document, in submission order."""
        with self._lock:
            latest = {job.request.doc_id: job for job in self._jobs}
        return [job.snapshot() for job in sorted(latest.values(), key=lambda job: job.id)]

    def batch(self) -> dict:
        """The jobs submitted since the queue was last idle (files dropped together or one after another while it
        read) as snapshots, and the seconds left of them all: what the library's progress line says."""
        now = time.monotonic()
        with self._lock:
            jobs = [job.snapshot(now) for job in self._jobs if job.id >= self._batch_from]
        return {"jobs": jobs, "seconds_left": folder_seconds_left(jobs, now)}

    def busy(self) -> bool:
        with self._lock:
            return any(job.status in ACTIVE for job in self._jobs)

    def wait_idle(self, timeout: float) -> bool:
        """Whether every read finished within `timeout` seconds (for tests and shutdown)."""
        deadline = time.monotonic() + timeout
        while self.busy():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def close(self) -> None:
        """Cancel what is running or queued and stop the worker."""
        with self._lock:
            doc_ids = [job.request.doc_id for job in self._jobs if job.status in ACTIVE]
        for doc_id in doc_ids:
            self.cancel(doc_id)
        self._pending.put(None)
        if self._worker is not None:
            self._worker.join(timeout=30)

    def _active(self, doc_id: str) -> ReadJob | None:
        return next((j for j in self._jobs if j.request.doc_id == doc_id and j.status in ACTIVE), None)

    def _work(self) -> None:
        while (job := self._pending.get()) is not None:
            if job.status == QUEUED:
                self._run(job)

    def _run(self, job: ReadJob) -> None:
        request = job.request
        try:
            job.status = COUNTING
            job.tokens_total = self.service.count_tokens(
                request.doc_id,
                request.path,
                request.model,
                lambda progress: self._counted(job, progress),
                request.dtype,
            )
            # a resumed read shows where it stands at once, not 0 until its first piece is read
            job.tokens_read = job.resumed_at = self.service.resume_point(
                request.doc_id, request.config, request.model, request.dtype
            )
            job.status = READING
            job.reading_since = time.monotonic()
            job.report = self.service.read(
                request.path,
                request.config,
                request.model,
                lambda pot: self._step(job, pot),
                checkpoint_seconds=request.checkpoint_seconds,
                dtype=request.dtype,
            ).as_json()
            job.tokens_read = job.report["tokens"]
            job.cycles = job.report["cycles"]
            job.entries = job.report["pot_entries"]
            if not job.report["reused"] and request.keeps_read_log:
                self.service.save_read_log(request.doc_id, self._read_log(job))
            job.status = DONE
        except Cancelled:
            job.status = CANCELLED
        except USER_ERRORS as exc:
            job.error = one_line(exc)
            job.status = FAILED
        except Exception as exc:  # a bug, not the user's doing: keep the worker alive and say what happened
            log.exception("reading %s failed", request.name)
            job.error = f"unexpected error: {type(exc).__name__}: {one_line(exc)}"
            job.status = FAILED
        finally:
            job.finished_at = time.monotonic()

    def _counted(self, job: ReadJob, progress) -> None:
        job.tokens_counted = progress.tokens_done
        if job.cancel_requested.is_set():
            raise Cancelled(job.request.name)

    def _step(self, job: ReadJob, pot: Pot) -> None:
        job.tokens_read = pot.document_tokens
        job.cycles = pot.cycles
        job.last_step = (time.monotonic(), pot.document_tokens)
        if job.first_step is None:
            job.first_step = job.last_step
        job.entries = pot.entries
        job.memory.add(pot, self._process)
        if job.cancel_requested.is_set():
            raise Cancelled(job.request.name)

    def _read_log(self, job: ReadJob) -> dict:
        request = job.request
        return {
            "doc_id": request.doc_id,
            "model": request.model,
            "settings": request.config.identity(),
            "report": job.report,
            "samples": job.memory.samples,
        }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
