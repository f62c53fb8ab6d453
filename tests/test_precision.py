"""--dtype: what `auto` picks, that a pot records its dtype and is reused only by the same one, and --threads."""

from __future__ import annotations

import json

import pytest
import torch

from infinipot.app.cli.main import main
from infinipot.core import precision
from infinipot.core.precision import dtype_in_key, pot_key, resolve_dtype, set_threads

CPU = torch.device("cpu")


@pytest.fixture
def no_dtype_variable(monkeypatch):
    monkeypatch.delenv(precision.DTYPE_VARIABLE, raising=False)


def test_auto_is_bf16_only_where_the_cpu_multiplies_bf16_natively(no_dtype_variable, monkeypatch):
    for flags, expected in (
        ({"amx_bf16": True, "avx512_bf16": True}, torch.bfloat16),
        ({"amx_bf16": False, "avx512_bf16": True}, torch.bfloat16),
        ({"amx_bf16": False, "avx512_bf16": False, "avx2": True, "architecture": "x86_64"}, torch.float32),
    ):
        monkeypatch.setattr(precision, "cpu_features", lambda flags=flags: flags)
        assert resolve_dtype("auto", CPU) == expected, flags
    assert resolve_dtype("auto", torch.device("cuda")) == torch.bfloat16  # no CPU question asked on a GPU
    assert resolve_dtype("float32", torch.device("cuda")) == torch.float32
    assert resolve_dtype("bfloat16", CPU) == torch.bfloat16


def test_the_machine_variable_decides_auto_and_a_wrong_one_is_one_line(monkeypatch):
    monkeypatch.setattr(precision, "cpu_features", lambda: {"amx_bf16": True})
    monkeypatch.setenv(precision.DTYPE_VARIABLE, "float32")
    assert resolve_dtype("auto", CPU) == torch.float32
    assert resolve_dtype("bfloat16", CPU) == torch.bfloat16  # a named dtype wins over the machine's default
    monkeypatch.setenv(precision.DTYPE_VARIABLE, "fp8")
    with pytest.raises(ValueError, match="INFINIPOT_DTYPE must be one of auto, float32, bfloat16, got 'fp8'"):
        resolve_dtype("auto", CPU)
    with pytest.raises(ValueError, match="dtype must be one of"):
        resolve_dtype("half", CPU)


def test_a_float32_pot_keeps_the_bare_model_key_and_others_carry_their_dtype():
    assert pot_key("smollm2-135m-instruct-q4_1", torch.float32) == "smollm2-135m-instruct-q4_1"
    assert pot_key("smollm2-135m-instruct-q4_1", torch.bfloat16) == "smollm2-135m-instruct-q4_1@bfloat16"
    assert dtype_in_key("smollm2-135m-instruct-q4_1@bfloat16") == "bfloat16"
    assert dtype_in_key("smollm2-135m-instruct-q4_1") == "float32"
    assert dtype_in_key("/models/org@team/name") == "float32"  # an @ in a folder name is not a dtype


def test_threads_follow_the_option_then_the_environment(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert set_threads(None) == torch.get_num_threads() == 1  # OMP_NUM_THREADS is left to torch
        monkeypatch.delenv("OMP_NUM_THREADS")
        monkeypatch.setattr(precision, "cpu_features", lambda: {"num_physical_cores": 1})
        assert set_threads(None) == 1  # one per physical core
        with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
            set_threads(0)
    finally:
        torch.set_num_threads(before)


def read_json(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_pot_is_reused_only_by_a_read_in_the_same_dtype(capsys, tiny_model_dir, document):
    from infinipot.app.service import DocumentService

    common = ("--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json")
    fp32 = read_json(capsys, "read", str(document), *common, "--dtype", "float32")
    bf16 = read_json(capsys, "read", str(document), *common, "--dtype", "bfloat16")
    again = read_json(capsys, "read", str(document), *common, "--dtype", "bfloat16")
    assert not fp32["reused"] and not bf16["reused"] and again["reused"]
    assert fp32["doc_id"] == bf16["doc_id"]

    service = DocumentService(device="cpu")
    pots = service.store.pots.for_document(fp32["doc_id"])
    assert sorted(dtype_in_key(pot.model_identity) for pot in pots) == ["bfloat16", "float32"]
    answering = service.open_pot(fp32["doc_id"])  # the latest general pot, the bf16 one, loaded in bf16
    assert dtype_in_key(answering.record.model_identity) == "bfloat16"
    assert answering.engine.loaded.dtype == torch.bfloat16
    assert answering.pot.keys[0].dtype == torch.bfloat16  # stored and loaded in the dtype it was read in


def test_a_pot_named_by_dtype_answers_in_that_dtype(capsys, tiny_model_dir, document):
    common = ("--model", tiny_model_dir, "--pot-size", "128", "--keep", "48")
    read_json(capsys, "read", str(document), *common, "--dtype", "float32", "--json")
    read_json(capsys, "read", str(document), *common, "--dtype", "bfloat16", "--json")
    for dtype in ("float32", "bfloat16"):
        answer = read_json(
            capsys,
            "ask",
            document.name,
            "What is the passkey?",
            *common,
            "--dtype",
            dtype,
            "--max-new-tokens",
            "4",
            "--answer-from",
            "pot",
            "--json",
        )
        assert answer["reused_pot"], dtype  # the pot of that dtype was found, nothing was read again


def test_an_unknown_dtype_is_refused_by_the_parser(capsys, document):
    with pytest.raises(SystemExit) as exit_info:
        main(["read", str(document), "--dtype", "half"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'half'" in capsys.readouterr().err


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_one_row_products_give_the_plain_linear_layers_results_bit_for_bit(dtype, monkeypatch):
    from tiny_models import build_model

    from infinipot.core import generate
    from infinipot.core.generate import decode_one_token, prefill
    from infinipot.core.hf_adapter import new_cache
    from infinipot.core.precision import _OneRowLinear, one_row_products

    torch.manual_seed(0)
    model = build_model("llama").to(dtype).eval()
    plain = build_model("llama").to(dtype).eval()
    plain.load_state_dict(model.state_dict())
    one_row_products(model)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(type(m) is _OneRowLinear for m in linears)
    head = model.get_output_embeddings()
    assert head.weight is model.get_input_embeddings().weight or not model.config.tie_word_embeddings
    biased = torch.nn.Linear(8, 5).to(dtype)
    reference = torch.nn.Linear(8, 5).to(dtype)
    reference.load_state_dict(biased.state_dict())
    biased.__class__ = _OneRowLinear
    for shape in ((1, 1, 8), (8,), (1, 3, 8)):  # one row decoded, a bare vector, rows of a prompt
        x = torch.randn(shape, dtype=dtype)
        assert torch.equal(biased(x), reference(x)) and biased(x).shape == reference(x).shape

    def greedy(m) -> tuple[list[int], torch.Tensor]:
        cache, tokens = new_cache(), []
        with torch.inference_mode():
            logits = prefill(m, cache, list(range(5, 40)), 0)
            for step in range(6):
                tokens.append(int(logits.argmax()))
                logits = decode_one_token(m, cache, tokens[-1], 35 + step)
        return tokens, logits

    monkeypatch.setattr(generate, "decoded_hidden", lambda *args: None)  # the modules' products, not core.one_token's
    ours, theirs = greedy(model), greedy(plain)
    assert ours[0] == theirs[0] and torch.equal(ours[1], theirs[1])


def test_a_model_loaded_on_a_cpu_in_bfloat16_decodes_one_row_products(tiny_model_dir):
    from infinipot.core.model import ModelSpec, load_model
    from infinipot.core.precision import _OneRowLinear

    for dtype, expected in (("bfloat16", _OneRowLinear), ("float32", torch.nn.Linear)):
        loaded = load_model(ModelSpec(name=tiny_model_dir, device="cpu", dtype=dtype), home=None)
        assert {type(m) for m in loaded.model.modules() if isinstance(m, torch.nn.Linear)} == {expected}
