"""What makes CCD as fast as a plain forward on a GPU, checked on a CPU: a read's attention shapes and forwards,
host syncs and op counts in a compression, and the pots read that way (tiny random models)."""

import math

import pytest
import torch
from tiny_models import random_ids, tiny_loaded, tiny_tokenizer
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import LlamaConfig, LlamaForCausalLM

from infinipot.core import eviction, hf_adapter
from infinipot.core import reader as reader_module
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import LoadedModel
from infinipot.core.pieces import PieceGrid

# What reads a value back from the device to the host: each one stalls a GPU's queue until it drains.
SYNC_OPS = {"aten._local_scalar_dense.default", "aten.item.default", "aten.nonzero.default", "aten.is_nonzero.default"}


class OpRecorder(TorchDispatchMode):
    """Every aten op dispatched meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


def deep_loaded(layers: int) -> LoadedModel:
    """A tiny random Llama with `layers` layers (the bundled model has 30, a Llama-3.2-1B shape 16)."""
    config = LlamaConfig(
        vocab_size=len(tiny_tokenizer()),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    return LoadedModel(model=model, tokenizer=tiny_tokenizer(), identity=f"tiny-{layers}", device=torch.device("cpu"))


def recorded_shapes(monkeypatch) -> list[tuple[int, int]]:
    """(query rows, key rows) of every forward the reader runs."""
    shapes = []
    run_decoder = hf_adapter.run_decoder

    def recording(model, cache, ids, positions):
        shapes.append((ids.shape[1], hf_adapter.cache_length(cache) + ids.shape[1]))
        return run_decoder(model, cache, ids, positions)

    monkeypatch.setattr(hf_adapter, "run_decoder", recording)
    return shapes


def compression_ops(monkeypatch) -> list[list]:
    """The ops of each compression the reader runs (catalyst weights, selection, eviction, CR-RoPE)."""
    per_compression = []
    compress = reader_module.ContinualReader._compress

    def recording(self):
        with OpRecorder() as recorder:
            compress(self)
        per_compression.append(recorder.ops)

    monkeypatch.setattr(reader_module.ContinualReader, "_compress", recording)
    return per_compression


def read(engine: Engine, ids: list[int], chunk: int, fixed_shapes: bool):
    reader = engine.new_reader(fixed_shapes=fixed_shapes)
    reader.start(engine.prefix_ids)
    for start in range(0, len(ids), chunk):
        reader.feed(ids[start : start + chunk])
    return reader.finish()


def test_the_grid_ends_pieces_at_f_2f_3f_and_the_full_pot():
    grid = PieceGrid(forward=1024, limit=4096 - 39, rider=39)
    assert [grid.end(entries) for entries in (0, 5, 1024, 2048, 3072, 4000)] == [1024, 1024, 2048, 3072, 4096, 4096]
    assert grid.document_tokens(3072) == 4096 - 39 - 3072 and grid.fills(3072) and not grid.fills(2048)
    small = PieceGrid(forward=1024, limit=128 - 39, rider=39)  # a pot smaller than a piece: one piece a cycle
    assert small.end(48) == 128 and small.document_tokens(48) == 41 and small.fills(48)
    long_rider = PieceGrid(forward=24, limit=160 - 39, rider=39)  # a catalyst longer than a piece
    assert [long_rider.end(entries) for entries in (64, 88, 112)] == [88, 112, 160]
    assert long_rider.document_tokens(112) == 9 and long_rider.fills(112)
    unbounded = PieceGrid(forward=100, limit=None)
    assert [unbounded.end(entries) for entries in (0, 99, 100, 250)] == [100, 100, 200, 300]
    with pytest.raises(ValueError, match="full"):
        grid.end(4096 - 39)


def test_a_128k_read_on_the_grid_runs_four_attention_shapes_and_no_forward_beyond_its_rows(monkeypatch):
    engine = Engine(deep_loaded(2), PotConfig())
    tokens = 128 * 1024
    shapes = recorded_shapes(monkeypatch)
    pot = read(engine, random_ids(tokens, seed=1), chunk=1000, fixed_shapes=True)  # chunks off the grid
    assert pot.document_tokens == tokens and pot.cycles >= 60
    assert len(set(shapes)) <= 4, sorted(set(shapes))
    # the rows a read must run: the opening, the document, and the catalyst riding along before each compression
    rows = len(engine.prefix_ids) + tokens + pot.cycles * len(engine.catalyst_ids)
    assert len(shapes) == math.ceil(rows / engine.config.forward_tokens)
    plain = math.ceil(tokens / engine.config.forward_tokens)
    catalyst = len(engine.catalyst_ids)
    per_cycle = engine.config.pot_size - engine.config.keep_size - catalyst  # document tokens between compressions
    assert len(shapes) <= math.ceil(plain * (per_cycle + catalyst) / per_cycle) + 1  # 131 here, against 128 plain
    shapes.clear()
    read(engine, random_ids(tokens, seed=1), chunk=1000, fixed_shapes=False)  # pieces where the chunks end
    assert len(set(shapes)) > 60 and len(shapes) > plain * 1.4


@pytest.mark.parametrize("method", ["infinipot", "streaming", "h2o"])
def test_a_compression_reads_nothing_back_from_the_device(method, monkeypatch):
    config = PotConfig(pot_size=256, keep_size=128, forward_tokens=64, method=method)
    engine = Engine(deep_loaded(30), config)
    per_compression = compression_ops(monkeypatch)
    pot = engine.read([random_ids(1500, seed=2)])
    assert pot.cycles == len(per_compression) >= 5
    syncs = [[str(op) for op in ops if str(op) in SYNC_OPS] for ops in per_compression]
    assert syncs == [[]] * len(per_compression)


@pytest.mark.parametrize("nuc_unit", ["sentence", "word-edges", "token"])
def test_a_piece_s_bookkeeping_reads_nothing_back_from_the_device(nuc_unit, monkeypatch):
    """Around the forward (transformers' own code, not counted): NuC, word and sentence units, provenance."""
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=64, forward_tokens=24, nuc_unit=nuc_unit))
    recorder = OpRecorder()
    run_decoder = hf_adapter.run_decoder

    def forward_unrecorded(*args):
        recorder.__exit__(None, None, None)
        try:
            return run_decoder(*args)
        finally:
            recorder.__enter__()

    read_piece = reader_module.ContinualReader._read

    def recorded(self, *args, **kwargs):
        with recorder:
            read_piece(self, *args, **kwargs)

    monkeypatch.setattr(hf_adapter, "run_decoder", forward_unrecorded)
    monkeypatch.setattr(reader_module.ContinualReader, "_read", recorded)
    pot = read(engine, random_ids(400, seed=8), chunk=50, fixed_shapes=True)
    assert pot.cycles >= 3 and len(recorder.ops) > 100
    assert [str(op) for op in recorder.ops if str(op) in SYNC_OPS] == []


@pytest.mark.parametrize("method", ["infinipot", "streaming"])
def test_a_compression_runs_the_same_few_ops_at_30_and_at_16_layers(method, monkeypatch):
    # as on a GPU: CR-RoPE in one slice (a CPU slices a large pot's rows to keep its temporaries in its caches)
    monkeypatch.setattr(eviction, "CPU_ROTATION_BYTES", 2**40)
    config = PotConfig(method=method, window_step=1024)  # the default pot
    counts = {}
    for layers in (30, 16):
        per_compression = compression_ops(monkeypatch)
        Engine(deep_loaded(layers), config).read([random_ids(8500, seed=3)])
        counts[layers] = {sum(not op.is_view for op in ops) for ops in per_compression}
        assert len(per_compression) >= 2
    assert counts[30] == counts[16]
    assert len(counts[30]) == 1 and max(counts[30]) < 100, counts


def test_a_read_on_the_grid_is_the_same_pot_whatever_chunks_are_fed():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=64, forward_tokens=24))
    ids = random_ids(900, seed=4)
    ours = read(engine, ids, chunk=37, fixed_shapes=True)
    other = read(engine, ids, chunk=500, fixed_shapes=True)
    assert ours.cycles == other.cycles >= 8
    for name, tensor in ours.tensors().items():
        assert torch.equal(tensor, other.tensors()[name]), name


def test_the_last_piece_padded_to_the_grid_reads_as_it_would_unpadded(monkeypatch):
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=64, forward_tokens=24))
    ids = random_ids(611, seed=5)  # ends mid-piece
    shapes = recorded_shapes(monkeypatch)
    padded = read(engine, ids, chunk=100, fixed_shapes=True)
    assert shapes[-1][0] == 24 and padded.tokens_read == len(engine.prefix_ids) + len(ids)
    original = reader_module.ContinualReader._read
    monkeypatch.setattr(
        reader_module.ContinualReader, "_read", lambda self, *args, pad=0, **kwargs: original(self, *args, **kwargs)
    )
    unpadded = read(engine, ids, chunk=100, fixed_shapes=True)
    assert unpadded.counters() == padded.counters()
    for name, tensor in padded.tensors().items():
        torch.testing.assert_close(tensor, unpadded.tensors()[name], rtol=1e-5, atol=1e-5, msg=name)


def test_a_read_on_the_grid_resumed_from_a_checkpoint_reads_on_as_one_read():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=64, forward_tokens=24))
    ids = random_ids(800, seed=6)
    whole = read(engine, ids, chunk=50, fixed_shapes=True)
    checkpoints = []
    reader = engine.new_reader(on_step=lambda pot: checkpoints.append(pot.clone()), fixed_shapes=True)
    reader.start(engine.prefix_ids)
    for start in range(0, 450, 50):  # killed after 450 tokens: tokens that waited for a piece are not in the pot
        reader.feed(ids[start : start + 50])
    checkpoint = checkpoints[-1]
    assert checkpoint.document_tokens < 450 and checkpoint.cycles >= 2
    resumed = engine.new_reader(fixed_shapes=True)
    resumed.resume(checkpoint)
    rest = ids[checkpoint.document_tokens :]
    for start in range(0, len(rest), 50):
        resumed.feed(rest[start : start + 50])
    pot = resumed.finish()
    for name, tensor in whole.tensors().items():
        assert torch.equal(tensor, pot.tensors()[name]), name


def test_a_snapshot_on_the_grid_keeps_the_tokens_waiting_for_a_piece():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=64, forward_tokens=24))
    ids = random_ids(700, seed=7)
    reader = engine.new_reader(fixed_shapes=True)
    reader.start(engine.prefix_ids)
    reader.feed(ids[:310])
    state = reader.snapshot()
    assert state.pending  # 310 tokens do not end on the grid
    reader.feed(ids[310:])
    first = reader.finish()
    reader.restore(state)
    reader.feed(ids[310:])
    again = reader.finish()
    for name, tensor in first.tensors().items():
        assert torch.equal(tensor, again.tensors()[name]), name
