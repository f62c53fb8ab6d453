"""Reading a library on Ray workers, on this machine (`--workers N`) or a cluster (`--cluster ADDRESS`).

Each worker is an actor that loads the model once and reads whole documents: the file's bytes go to it (a worker
on another machine cannot see this one's files), and its pot, location map and stream facts come back. This
process alone prepares each read (reuse, claim) and stores each pot, as for a read here (one writer). A worker
that dies is restarted by Ray and its document read again; a document that fails on a worker fails as it would
here, in one line. Ray is an optional extra: without it, `--workers` and `--cluster` say how to install it.

A document's read on a worker keeps no checkpoints of its own: a stop ends it, and the next run reads it again
(a checkpoint left by an earlier read here is resumed on the worker). Documents that continue a grown log's stored
pot are read here.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from infinipot.app.library.pot_files import pot_from_storage
from infinipot.app.read.checkpointed import ReadOutcome, mark_read, read_document, skip_tokens, store_pot
from infinipot.app.read.file_reader import FileChangedWhileRead, FileReader, ReadJob
from infinipot.app.read.many import FILE_ERRORS, DocumentDone, LibraryProgress, error_line, file_size
from infinipot.app.read.report import ReadReport
from infinipot.core.config import PotConfig
from infinipot.ingest import file_bytes

RAY_MISSING = (
    "--workers and --cluster read on Ray, which is not installed: pip install 'infinipot[ray]' "
    "(or: pip install 'ray>=2.52,<2.61')"
)
# Times a document is given to a worker again after its worker died under it.
RETRIES_AFTER_A_DEATH = 2
# Seconds between two looks at the workers' progress.
POLL_SECONDS = 1.0


def require_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(RAY_MISSING) from None
    return ray


@dataclass(frozen=True)
class WorkerSettings:
    """Where the workers run: `workers` actors on a Ray instance started here, or on the cluster at `cluster`
    (then one per `threads` CPUs it has, unless `workers` says). Each reads with `threads` CPU threads."""

    workers: int | None = None
    cluster: str | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        if self.workers is None and self.cluster is None:
            raise ValueError("workers need --workers N or --cluster ADDRESS")
        if self.workers is not None and (isinstance(self.workers, bool) or self.workers < 1):
            raise ValueError(f"--workers must be at least 1, got {self.workers}")
        if self.threads < 1:
            raise ValueError(f"threads per worker must be at least 1, got {self.threads}")


class PotReader:
    """What a worker runs (a Ray actor; plain Python, so it is also tested without Ray)."""

    def __init__(self, models_home: str, model_name: str, device: str, dtype: str | None, threads: int) -> None:
        from infinipot.app.library.models import ModelShelf
        from infinipot.core.precision import set_threads

        set_threads(threads)
        home = Path(models_home)
        if not os.access(home if home.exists() else home.parent, os.W_OK):  # another machine: its own folder
            home = Path(tempfile.gettempdir()) / "infinipot-worker"
        self.loaded = ModelShelf(home, device, dtype).get(model_name, dtype)
        self.tokens = 0

    def read(self, name: str, data: bytes, config: PotConfig, resume: dict | None) -> dict:
        """Read the document `name` (its bytes) into a pot with `config`, from `resume` (a checkpoint) when given."""
        from infinipot.core.engine import Engine
        from infinipot.ingest import open_document

        started = time.perf_counter()
        self.tokens = resume["document_tokens"] if resume else 0
        with tempfile.TemporaryDirectory(prefix="infinipot-worker-") as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            engine = Engine(self.loaded, config)
            chunk_tokens = resume["stream"]["chunk_tokens"] if resume else max(config.forward_tokens, 256)
            stream = open_document(path).token_stream(engine.tokenizer, chunk_tokens=chunk_tokens)
            reader = engine.new_reader(on_step=self._step)
            if resume is not None:
                model_dtype = next(self.loaded.model.parameters()).dtype
                reader.resume(pot_from_storage(resume["tensors"], resume["counters"], self.loaded.device, model_dtype))
            else:
                reader.start(engine.prefix_ids)
            for ids in skip_tokens(stream, resume["document_tokens"] if resume else 0):
                reader.feed(ids)
            pot = reader.finish()
            if pot.document_tokens == 0:
                from infinipot.ingest import IngestError

                raise IngestError(f"{name} contains no text to read")
            return {
                "tensors": {key: tensor.cpu() for key, tensor in pot.tensors().items()},
                "counters": pot.counters(),
                "location_map": stream.location_map,
                "read_prefix": (stream.end_byte, stream.fingerprint),
                "warnings": list(stream.warnings),
                "seconds": time.perf_counter() - started + (resume["read_seconds"] if resume else 0.0),
                "resumed_from": resume["document_tokens"] if resume else 0,
            }

    def _step(self, pot) -> None:
        self.tokens = pot.document_tokens

    def progress(self) -> int:
        return self.tokens


@dataclass
class _Running:
    actor: object
    job: ReadJob
    path: Path


def checkpoint_state(reader: FileReader, job: ReadJob) -> dict | None:
    """The latest checkpoint of the claimed pot, as a worker resumes from it; None when there is none."""
    store = reader.library.store
    checkpoint = store.checkpoints.latest(job.record.id)
    if checkpoint is None:
        return None
    try:
        tensors = store.load_checkpoint(checkpoint)
    except FILE_ERRORS:
        store.drop_checkpoints(job.record.id)
        return None
    return {
        "tensors": tensors,
        "counters": checkpoint.counters,
        "document_tokens": checkpoint.document_tokens,
        "stream": checkpoint.stream,
        "read_seconds": checkpoint.read_seconds,
    }


def store_result(reader: FileReader, job: ReadJob, result: dict) -> ReadReport:
    """Store what a worker read, as a read here stores it (read/checkpointed.py), and finish the read."""
    store = reader.library.store
    loaded = job.engine.loaded
    pot = pot_from_storage(result["tensors"], result["counters"], loaded.device, next(loaded.model.parameters()).dtype)
    final = store_pot(store, job.record, pot, result["location_map"], result["read_prefix"], result["seconds"])
    mark_read(store, job.record, pot)
    outcome = ReadOutcome(pot=pot, record=final, resumed_from=result["resumed_from"], warnings=result["warnings"])
    return reader.finish(job, outcome)


def start_workers(ray, settings: WorkerSettings, models_home: Path, model_name: str, device: str, dtype: str | None):
    """Connect to Ray (start it here, or join the cluster) and start the actors; returns them."""
    if settings.cluster is not None:
        ray.init(address=settings.cluster, log_to_driver=False, configure_logging=False)
        count = settings.workers or max(1, int(ray.cluster_resources().get("CPU", 1)) // settings.threads)
    else:
        count = settings.workers
        ray.init(
            num_cpus=count * settings.threads,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    # A worker that dies is restarted, and the document it was reading is given to it again (by Ray).
    options = {
        "num_cpus": settings.threads,
        "max_restarts": RETRIES_AFTER_A_DEATH,
        "max_task_retries": RETRIES_AFTER_A_DEATH,
        "max_concurrency": 2,
    }
    if device == "cuda":
        options["num_gpus"] = 1  # a GPU worker asks Ray for one
    actor_class = ray.remote(**options)(PotReader)
    return [actor_class.remote(str(models_home), model_name, device, dtype, settings.threads) for _ in range(count)]


def read_on_workers(
    reader: FileReader,
    files: list[Path],
    config: PotConfig,
    model_name: str,
    dtype: str | None,
    settings: WorkerSettings,
    progress: LibraryProgress,
    on_progress: Callable[[LibraryProgress], None] | None = None,
) -> Iterator[DocumentDone]:
    """Read the files on Ray workers; each finished document as it completes (in the order they finish)."""
    ray = require_ray()
    library = reader.library
    reader.library.models.get(model_name, dtype)  # converted once here, before the workers look for it
    actors = start_workers(
        ray, settings, library.home, model_name, library.models.device, dtype or library.models.dtype
    )
    idle = deque(actors)
    pending = deque(files)
    running: dict[object, _Running] = {}
    try:
        while pending or running:
            while idle and pending:
                path = pending.popleft()
                try:
                    data, fingerprint = file_bytes(path)  # read once: the worker gets the bytes fingerprinted
                    job = reader.prepare(path, config, model_name, False, dtype, fingerprint)
                    if not isinstance(job, ReadReport) and job.scope.base is not None:  # a grown log continues here
                        interval = reader.checkpoint_seconds
                        outcome = read_document(library.store, job.engine, job.document, job.record, interval)
                        job = reader.finish(job, outcome)
                except FILE_ERRORS as exc:
                    progress.finished(file_size(path), None)
                    yield DocumentDone(path, None, error_line(exc))
                    continue
                if isinstance(job, ReadReport):
                    progress.finished(file_size(path), job)
                    yield DocumentDone(path, job)
                    continue
                actor = idle.popleft()
                running[_submit(actor, reader, job, config, data)] = _Running(actor, job, path)
                data = b""  # Ray holds its own copy now; not kept while the workers read
                progress.current[path.name] = 0
            if not running:
                continue
            ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_SECONDS)
            _look_at_progress(ray, running, progress)
            if on_progress is not None:
                on_progress(progress)
            for ref in ready:
                run = running.pop(ref)
                done = _collect(ray, reader, run, ref)
                progress.current.pop(run.path.name, None)
                progress.finished(file_size(run.path), done.report)
                idle.append(run.actor)
                yield done
    except BaseException:
        for run in running.values():
            library.store.pots.release(run.job.record.id, "interrupted")
        raise
    finally:
        for actor in actors:
            ray.kill(actor)
        ray.shutdown()


def _submit(actor, reader: FileReader, job: ReadJob, config: PotConfig, data: bytes):
    return actor.read.remote(job.path.name, data, config, checkpoint_state(reader, job))


def _collect(ray, reader: FileReader, run: _Running, ref) -> DocumentDone:
    """The finished document, stored; or why it could not be read (its pot failed, or left to resume)."""
    store = reader.library.store
    try:
        result = ray.get(ref)
    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        line = f"its worker died {RETRIES_AFTER_A_DEATH + 1} times while reading it ({why})"
        store.pots.release(run.job.record.id, f"interrupted: {line}")
        return DocumentDone(run.path, None, line)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        line = error_line(cause)
        store.fail_pot(run.job.record.id, line)
        return DocumentDone(run.path, None, line)
    try:
        return DocumentDone(run.path, store_result(reader, run.job, result))
    except FileChangedWhileRead as exc:  # its pot is stored as the file was: the next read continues or rereads
        return DocumentDone(run.path, None, f"{exc}; run the read again to read it as it is now")
    except FILE_ERRORS as exc:
        store.pots.release(run.job.record.id, f"interrupted: {error_line(exc)}")
        return DocumentDone(run.path, None, error_line(exc))


def _look_at_progress(ray, running: dict, progress: LibraryProgress) -> None:
    refs = {run.path.name: run.actor.progress.remote() for run in running.values()}
    for name, ref in refs.items():
        try:
            progress.current[name] = ray.get(ref, timeout=POLL_SECONDS)
        except Exception:  # a worker busy dying or restarting: its last figure stays
            continue
