"""Continual Context Distillation: stream any number of tokens through a pot of at most |M| entries."""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from . import hf_adapter
from .capacity import check_full_context
from .config import PotConfig
from .distill import distill, reduce_trailing_catalyst
from .errors import PotTooSmallError
from .pieces import PieceGrid
from .pot import Pot
from .reading_evidence import ReadingEvidence
from .scorers import make_scorer
from .selection import KEPT_READ
from .slab import KVSlab
from .tail_queue import TailQueue
from .words import TokenBoundaries, max_over_sentences, share_with_edges, sum_over_words

# Rows of LM-head logits computed at once for NuC: at most this many, and at most what keeps each of the two
# (rows, vocab) buffers within _NOVELTY_BUFFER_BYTES (256 rows at a 49K vocabulary in bf16, 128 in fp32; a 152K
# vocabulary in fp32 gets 43; on a GPU a whole piece). They live as long as the read, beside the forward's own
# activations.
_NOVELTY_ROWS = 256
_NOVELTY_BUFFER_BYTES = 25 * 2**20


@dataclass(frozen=True)
class ReaderState:
    """What a reader carries from one `feed` to the next, detached from it (see ContinualReader.snapshot)."""

    pot: Pot | None  # None while every token fed so far waits in `pending`
    evidence: dict[str, torch.Tensor]  # ReadingEvidence.tensors
    tail: TailQueue | None
    sink_tokens: int
    pending: tuple[int, ...] = ()  # tokens fed but not read yet (pieces on the grid, see ContinualReader)


class ContinualReader:
    """Feeds tokens in pieces; compresses to |C| entries whenever the next piece would overflow the pot.

    The cache holds at most |M| - |P| entries after any read, and |M| while the catalyst prompt is in it.
    The strategy's capability flags change the loop without changing that bound: a rolling window keeps all
    but room for the next step instead of |C|; truncation reads the first half of |M| - |P| and queues the
    latest tokens for `finish`; the uncompressed method (the only one outside the bound) never compresses.
    """

    def __init__(
        self,
        model,
        config: PotConfig,
        catalyst_ids: list[int],
        on_step: Callable[[Pot], None] | None = None,
        boundaries: TokenBoundaries | None = None,
        fixed_shapes: bool | None = None,
    ) -> None:
        """`boundaries`: from core.words.token_boundaries, needed unless NuC is scored per token.

        `fixed_shapes` (default: on a GPU): forward pieces end on a fixed grid of entry counts (core.pieces) whatever
        chunks are fed, tokens that do not make a whole piece yet waiting for the next `feed`, and the last piece is
        padded to the grid; a read of any length then runs a handful of attention shapes. Off, pieces end where the
        fed chunks end (or a compression falls), so a log that grew continues exactly as a one-go read would have
        cut it; the pot differs only where a word or sentence is cut by a piece's edge (NuC scores each part alone).
        """
        if config.nuc_per_word and boundaries is None:
            raise ValueError("NuC per word needs the tokenizer's word boundaries (core.words.token_boundaries)")
        self.model = model
        self.config = config
        self.catalyst_ids = list(catalyst_ids)
        self.scorer = make_scorer(config.method, config.nuc_ratio)
        self.on_step = on_step
        self.device = next(model.parameters()).device
        self.boundaries = boundaries.to(self.device) if config.nuc_per_word else None
        self.layers = model.config.num_hidden_layers
        # Truncation reads its head and tail by the stream's own indices: it keeps to the fed chunks.
        if fixed_shapes is None:
            fixed_shapes = self.device.type == "cuda"
        self.fixed_shapes = fixed_shapes and not self.scorer.reads_ends_only
        self.pending: list[int] = []
        self.prefix_len = 0
        self.cache = None
        # The pot's keys and values, preallocated for |M| entries and written in place (core.slab); None for the
        # uncompressed method, which has no bound, and after `finish` (the returned pot is views of it).
        self.slab: KVSlab | None = None
        self.pot: Pot | None = None
        self.sink_tokens = config.min_sink_tokens
        self.evidence = ReadingEvidence(self.scorer, hf_adapter.kv_heads(model))
        self.tail: TailQueue | None = None
        # (2, rows, V) in the model's dtype, reused by every NuC slice (logits, then their log-softmax); dropped by
        # `finish`. A new pair per slice was the larger part of the NuC pass on a CPU (page faults, not arithmetic);
        # rows: see _NOVELTY_ROWS.
        self._novelty_buffers: torch.Tensor | None = None
        # Catalyst attention per layer (H_kv, n) taken by the piece that just filled the pot, for the compression
        # that follows it at once (see `_feed_pieces`); None otherwise.
        self._ridden_catalyst: list[torch.Tensor] | None = None
        if self.scorer.rolling and self.kept_size() < 1:
            raise PotTooSmallError(
                f"a window step of {config.rolling_step} leaves nothing to keep in a pot of {config.pot_size} entries "
                f"with a {len(self.catalyst_ids)}-token catalyst prompt; use a smaller --window-step"
            )
        if self.scorer.compresses and self.room_after_compression() < 1:
            raise PotTooSmallError(
                f"pot of {config.pot_size} entries has no room to read: kept size {config.keep_size} plus the "
                f"{len(self.catalyst_ids)}-token catalyst prompt fill it; use a larger --pot-size or smaller --keep"
            )

    def room_after_compression(self) -> int:
        """|M| - |C| - |P|: fresh tokens read between two compressions."""
        return self.config.pot_size - self.kept_size() - len(self.catalyst_ids)

    def kept_size(self) -> int:
        """Entries a compression keeps: |C|, or for a rolling window all but room for the next step."""
        if self.scorer.rolling:
            return self.config.pot_size - len(self.catalyst_ids) - self.config.rolling_step
        return self.config.keep_size

    def _read_limit(self) -> int:
        """Most entries held after a read: |M| - |P|, unbounded for the uncompressed method."""
        return self.config.pot_size - len(self.catalyst_ids) if self.scorer.compresses else sys.maxsize

    @torch.inference_mode()
    def start(self, prefix_ids: list[int]) -> None:
        """Read the chat template's opening; those tokens become sinks that are never evicted."""
        self.sink_tokens = self.scorer.sink_tokens(len(prefix_ids), self.config.min_sink_tokens)
        if self.scorer.compresses and self.sink_tokens >= self.kept_size():
            raise PotTooSmallError(
                f"the prompt opening ({len(prefix_ids)} tokens) does not fit in the kept size {self.kept_size()}"
            )
        self.pot = None
        self.cache = self._new_cache()
        self._ridden_catalyst = None
        self.evidence.reset()
        if self.scorer.reads_ends_only:
            self.tail = TailQueue(self._read_limit() - self._read_limit() // 2)
        self.prefix_len = len(prefix_ids)
        if self.fixed_shapes:  # read with the document's first tokens, in the grid's first piece
            self.pending = list(prefix_ids)
        else:
            self.pending = []
            self._read(prefix_ids, prefix_len=len(prefix_ids))

    @torch.inference_mode()
    def resume(self, pot: Pot) -> None:
        """Continue reading after a stored pot (a checkpoint, or a log that grew)."""
        self.sink_tokens = self.scorer.sink_tokens(pot.prefix_len, self.config.min_sink_tokens)
        self.pot = pot
        self.prefix_len = pot.prefix_len
        self.pending = []
        self._ridden_catalyst = None
        self.evidence.reset()
        if self.scorer.reads_ends_only:
            self.tail = TailQueue(self._read_limit() - self._read_limit() // 2)
        self.cache = self._new_cache(pot)

    def snapshot(self) -> ReaderState:
        """The state between two `feed` calls; `restore` continues from it as if nothing had been read since."""
        return ReaderState(
            pot=None if self.pot is None else self.pot.clone(),
            evidence={name: t.clone() for name, t in self.evidence.tensors.items()},
            tail=copy.deepcopy(self.tail),
            sink_tokens=self.sink_tokens,
            pending=tuple(self.pending),
        )

    @torch.inference_mode()
    def restore(self, state: ReaderState) -> None:
        """Go back to a snapshot: the next `feed` reads exactly as it would have right after the snapshot."""
        self.pot = state.pot  # its keys and values are copied into a fresh slab below; nothing else is written in place
        self.evidence.tensors = {name: t.clone() for name, t in state.evidence.items()}
        self.tail = copy.deepcopy(state.tail)
        self.sink_tokens = state.sink_tokens
        self.pending = list(state.pending)
        self._ridden_catalyst = None
        self.cache = self._new_cache(self.pot)

    def _new_cache(self, pot: Pot | None = None):
        """A cache holding `pot` (or nothing) to read on: over a fresh slab the pot is copied into, so the pot given
        stays as it is; a plain growing cache for the uncompressed method."""
        if not self.scorer.compresses:
            return hf_adapter.new_cache() if pot is None else pot.as_cache()
        self.slab = KVSlab(self.layers, self.config.pot_size)
        if pot is None:
            return hf_adapter.slab_cache(self.slab, 0)
        self.slab.fill(pot.keys, pot.values)
        self.pot = dataclasses.replace(pot, keys=None, values=None)
        self.pot.keys, self.pot.values = self.slab.layer_views(pot.entries)
        return hf_adapter.slab_cache(self.slab, pot.entries)

    @torch.inference_mode()
    def feed(self, ids: list[int]) -> None:
        """Read `ids`, compressing as often as needed; afterwards the pot holds at most |M| - |P| entries."""
        if self.tail is not None:  # truncation: the head is read now, everything after it only queued
            head = 0 if self.tail.pushed else max(0, self._read_limit() // 2 - self.pot.tokens_read)
            self.tail.push(ids[head:])
            ids = ids[:head]
        if self.fixed_shapes:
            self.pending.extend(ids)
            self._read_on_grid(final=False)
        else:
            self._feed_pieces(ids)

    @torch.inference_mode()
    def finish(self) -> Pot:
        """Read what was held back (truncation's last half) and return the pot; call after the last `feed`."""
        if self.tail is not None and self.tail.pushed:
            ids, skipped = self.tail.drain()
            self._feed_pieces(ids, start_index=self.pot.tokens_read + skipped)
        if self.fixed_shapes:
            self._read_on_grid(final=True)
        self._novelty_buffers = None
        self.slab, self.cache = None, None  # the pot returned is views of the slab: nothing may write into it now
        return self.pot

    def _feed_pieces(self, ids: list[int], start_index: int | None = None) -> None:
        """The CCD loop; `start_index` is the first token's stream index when tokens before it were skipped."""
        limit = self._read_limit()
        done = 0
        while done < len(ids):
            room = limit - self.pot.entries
            if room <= 0:
                self._compress()
                continue
            take = min(room, len(ids) - done, self.config.forward_tokens)
            if not self.scorer.compresses:
                check_full_context(self.model, self.pot.entries + take, held=self.pot.entries)
            index = None if start_index is None else start_index + done
            # The piece that fills the pot, when more follows, is followed by a compression at once: the catalyst
            # prompt rides along at its end, so one forward serves both (the weights are read once, not twice).
            compresses_next = take == room and done + take < len(ids)
            self._read(
                ids[done : done + take],
                prefix_len=self.pot.prefix_len,
                start_index=index,
                catalyst=compresses_next and self._catalyst_rides_along(),
            )
            done += take

    def _read_on_grid(self, final: bool) -> None:
        """Read the pending tokens in pieces that end on the grid (core.pieces). Without `final`, tokens that do not
        make a whole piece yet wait; so does a piece that would fill the pot until a token after it shows that a
        compression follows (its catalyst then rides along). With `final` all are read, the last piece padded to
        the grid's shape when the read records no attention of its own (the padding is taken out again)."""
        limit = self._read_limit()
        while self.pending:
            entries = self.pot.entries if self.pot is not None else 0
            if entries >= limit:
                self._compress()
                continue
            rides = self._catalyst_rides_along()
            grid = PieceGrid(
                self.config.forward_tokens,
                limit if self.scorer.compresses else None,
                len(self.catalyst_ids) if rides else 0,
            )
            take = grid.document_tokens(entries)
            fills = grid.fills(entries)
            if len(self.pending) < take + fills:
                if not final:
                    return
                take = min(take, len(self.pending))
            piece, self.pending = self.pending[:take], self.pending[take:]
            if not self.scorer.compresses:
                check_full_context(self.model, entries + take, held=entries)
            compresses_next = fills and bool(self.pending)
            rows = len(piece) + (grid.rider if compresses_next else 0)
            pad = grid.end(entries) - entries - rows if self.evidence.attention_mode is None else 0
            self._read(
                piece,
                prefix_len=self.pot.prefix_len if self.pot is not None else self.prefix_len,
                catalyst=compresses_next and rides,
                pad=pad,
            )

    def _catalyst_rides_along(self) -> bool:
        """Whether the catalyst pass can ride along with a reading piece (see `_read`)."""
        return (
            self.scorer.needs_catalyst
            and self.evidence.attention_mode is None  # that reading pass runs eager attention of its own
            and hf_adapter.rides_along(self.model)
        )

    def _compress(self) -> None:
        catalyst, self._ridden_catalyst = self._ridden_catalyst, None
        self.pot = distill(
            self.model,
            self.cache,
            self.pot,
            self.scorer,
            self.catalyst_ids,
            self.kept_size(),
            self.sink_tokens,
            self.config.cr_rope,
            carried=self.evidence.tensors,
            catalyst=catalyst,
            slab=self.slab,
        )
        self.evidence.after_compression()
        self.cache = hf_adapter.slab_cache(self.slab, self.pot.entries)
        self._check_bound()

    def _read(
        self,
        piece: list[int],
        prefix_len: int,
        start_index: int | None = None,
        catalyst: bool = False,
        pad: int = 0,
    ) -> None:
        """Forward one piece into the cache and append its provenance and NuC scores.

        `catalyst`: the catalyst prompt rides along after the piece in the same forward, at the positions a
        catalyst pass right after it would take; its attention over the pot (the piece included) is kept for
        the next compression and its entries are taken out of the cache again. `pad`: that many copies of the
        piece's last token follow it, so the forward has the grid's shape; no query of the piece sees them (the
        attention is causal) and they are taken out again.
        """
        if catalyst and pad:
            raise ValueError("a piece the catalyst rides along with is never padded")
        pot = self.pot
        start_position = pot.next_position if pot else 0
        if start_index is None:
            start_index = pot.tokens_read if pot else 0
        self._ridden_catalyst = None
        extra = self.catalyst_ids if catalyst else [piece[-1]] * pad
        ids = torch.tensor([piece + extra], device=self.device)  # (1, T + P) or (1, T + pad)
        positions = torch.arange(start_position, start_position + ids.shape[1], device=self.device)[None]  # (1, T + P)
        with self.evidence.capture(self.model) as attention:
            if catalyst:
                entries = hf_adapter.cache_length(self.cache) + len(piece)
                reduce = reduce_trailing_catalyst(entries)
                with hf_adapter.trailing_attention(self.model, len(extra), reduce) as ridden:
                    hidden = hf_adapter.run_decoder(self.model, self.cache, ids, positions)[0]  # (T + P, hidden)
                hf_adapter.drop_last(self.cache, len(extra))
                if all(layer is not None for layer in ridden):  # otherwise the compression runs its own pass
                    self._ridden_catalyst = ridden
            else:
                hidden = hf_adapter.run_decoder(self.model, self.cache, ids, positions)[0]  # (T + pad, hidden)
                hf_adapter.drop_last(self.cache, pad)
        hidden = hidden[: len(piece)]  # (T, hidden)
        ids, positions = ids[:, : len(piece)], positions[:, : len(piece)]
        novelty, last_logprobs = self._novelty(hidden, ids[0], pot.last_logprobs if pot else None)
        if self.boundaries is not None:
            starts = self.boundaries.word_starts[ids[0]]  # (T,)
            novelty = sum_over_words(novelty, starts)  # (T,)
            if self.config.nuc_unit == "word-edges":
                novelty = share_with_edges(novelty, starts)
            elif self.config.nuc_unit == "sentence":
                novelty = max_over_sentences(novelty, self.boundaries.sentence_ends[ids[0]])

        layers = hf_adapter.cache_layers(self.cache)
        kv_heads = layers[0][0].shape[1]
        shape = (self.layers, kv_heads, len(piece))
        origin = torch.arange(start_index, start_index + len(piece), device=self.device).expand(shape)
        fresh = {
            "origin": origin,
            "kept_by": torch.full(shape, KEPT_READ, dtype=torch.uint8, device=self.device),
            "novelty": novelty.expand(shape),
            "positions": positions[0].expand(shape),
        }
        if pot is None:
            merged = {name: t.contiguous() for name, t in fresh.items()}
            counters = {"cycles": 0, "peak_entries": 0}
        else:
            merged = {name: torch.cat([getattr(pot, name), t], dim=-1) for name, t in fresh.items()}
            counters = {"cycles": pot.cycles, "peak_entries": pot.peak_entries}
        self.pot = Pot(
            keys=[k for k, _ in layers],
            values=[v for _, v in layers],
            next_position=start_position + len(piece),
            prefix_len=prefix_len,
            tokens_read=start_index + len(piece),
            last_logprobs=last_logprobs,
            **merged,
            **counters,
        )
        self.evidence.after_read(attention, tuple(self.pot.origin.shape), self.device)
        self._check_bound()
        if self.on_step is not None:
            self.on_step(self.pot)

    def _novelty(
        self, hidden: torch.Tensor, ids: torch.Tensor, carried: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """-log p(x_t | pot, x_<t) for each token of the piece (T,), and the log-probs after its last token.

        The first token is predicted by the previous piece's last position (`carried`); the document's
        very first token has no prediction and gets 0. The LM head and the fused log-softmax run in the model's
        dtype: torch's bf16 log_softmax sums in fp32 and rounds only its output, which in bf16 costs a third of
        upcasting the (r, V) logits first (docs/experiments.md) and moves a score by ~0.05 nats, the size of
        the bf16 logits' own rounding. The carried row, which predicts the next piece's first token, is fp32.
        """
        scores = torch.zeros(len(ids), dtype=torch.float32, device=hidden.device)
        if carried is not None:
            scores[:1] = -carried[ids[:1]]  # a 1-element index: a 0-dim one is read back to the host
        logits_buffer, logprobs_buffer = self._buffers_for_novelty(hidden.dtype)
        slice_rows = logits_buffer.shape[0]
        logits = None
        for start in range(0, len(ids), slice_rows):
            rows = hidden[start : start + slice_rows]  # (r, hidden)
            logits = hf_adapter.vocab_logits_into(self.model, rows, logits_buffer[: len(rows)])  # (r, V) model dtype
            logprobs = torch.log_softmax(logits, dim=-1, out=logprobs_buffer[: len(rows)])  # (r, V)
            targets = ids[start + 1 : start + 1 + len(rows)]  # next tokens inside the piece
            predicted = logprobs[: len(targets)].gather(1, targets[:, None])[:, 0]  # (t,)
            scores[start + 1 : start + 1 + len(targets)] = -predicted.float()
        return scores, torch.log_softmax(logits[-1].float(), dim=-1)  # (V,) fp32

    def _buffers_for_novelty(self, dtype: torch.dtype) -> torch.Tensor:
        """The reused (2, rows, V) pair for `_novelty`, made on first use."""
        if self._novelty_buffers is None:
            vocab = self.model.get_output_embeddings().weight.shape[0]
            rows = max(1, min(_NOVELTY_ROWS, _NOVELTY_BUFFER_BYTES // (vocab * dtype.itemsize)))
            if self.device.type == "cuda":  # one slice per piece: a GPU has the memory, and each slice is launches
                rows = self.config.forward_tokens
            self._novelty_buffers = torch.empty(2, rows, vocab, dtype=dtype, device=self.device)
        return self._novelty_buffers

    def _check_bound(self) -> None:
        entries = self.pot.entries
        self.pot.peak_entries = max(self.pot.peak_entries, entries)
        if self.scorer.compresses and entries > self.config.pot_size:  # a broken invariant, not a user error
            raise RuntimeError(f"pot holds {entries} entries, above its bound of {self.config.pot_size}")
