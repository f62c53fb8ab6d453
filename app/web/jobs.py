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
        if self.first_step is not None and total and self.status == READING:
            since, tokens = self.first_step
            steady = (self.tokens_read - tokens) / (now - since) if now > since else 0.0
            eta = (total - self.tokens_read) / steady if steady > 0 else None
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
        }


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
            job = ReadJob(next(self._ids), request, memory=MemoryLog(self.memory_samples))
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

    def batch(self) -> list[dict]:
        """Snapshots of the jobs submitted since the queue was last idle (files dropped together or one after
        another while it read): what the library's progress line counts."""
        with self._lock:
            jobs = [job for job in self._jobs if job.id >= self._batch_from]
        return [job.snapshot() for job in jobs]

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
        if job.first_step is None:
            job.first_step = (time.monotonic(), pot.document_tokens)
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
