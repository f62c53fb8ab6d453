"""Integration tests on the bundled default model (SmolLM2-135M-Instruct from its GGUF)."""

import pytest
import torch

from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import ModelSpec, load_model

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def model_home(tmp_path_factory):
    return tmp_path_factory.mktemp("default-model-home")


@pytest.fixture(scope="module")
def default_model(model_home):
    return load_model(ModelSpec(device="cpu"), model_home)


def test_converted_model_is_cached_and_reloaded(default_model, model_home):
    converted = model_home / "models" / "smollm2-135m-instruct-q4_1"
    assert (converted / "config.json").is_file() and (converted / "model.safetensors").is_file()
    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    again = load_model(ModelSpec(device="cpu"), model_home)
    assert (converted / "model.safetensors").stat().st_mtime_ns == stamp  # not converted a second time
    assert again.identity == default_model.identity
    assert again.model.config.num_hidden_layers == 30 and again.model.config.num_key_value_heads == 3


def test_answer_equals_full_kv_greedy_when_document_fits(default_model):
    engine = Engine(default_model, PotConfig(forward_tokens=300))
    text = (
        "The lighthouse on Gannet Rock flashes white twice every fifteen seconds. Its keeper, Mara Ellison, "
        "climbs one hundred and fourteen steps each night. The combination of the storeroom safe is 7419. "
    ) * 6
    ids = default_model.tokenizer(text, add_special_tokens=False)["input_ids"]
    pot = engine.read([ids])
    assert pot.cycles == 0
    stats = AnswerStats()
    answer = "".join(engine.answer(pot, "What is the combination of the storeroom safe?", 24, stats))
    request = engine.answer_prompt_ids("What is the combination of the storeroom safe?")
    full = torch.tensor([engine.prefix_ids + ids + request])
    with torch.no_grad():
        reference = engine.model.generate(full, max_new_tokens=24, do_sample=False)[0, full.shape[1] :].tolist()
    stop = next((i for i, t in enumerate(reference) if t in engine.stop_ids), len(reference))
    assert stats.token_ids == reference[:stop]
    assert "7419" in answer


def test_the_shipped_retrieval_heads_are_the_bundled_models_own(model_home):
    """assets/retrieval_heads.json spares a fresh machine the calibration: it must be what calibrating the bundled
    model finds. Float32 everywhere; the last of four near-tied heads may swap on another CPU's rounding."""
    from infinipot.app.library.retrieval_heads import bundled_heads
    from infinipot.core.answer.retrieval_heads import calibrate

    loaded = load_model(ModelSpec(device="cpu", dtype="float32"), model_home)
    shipped = bundled_heads(loaded.identity)
    assert shipped is not None, "recalibrate and ship assets/retrieval_heads.json (see core/answer/retrieval_heads.py)"
    fresh = calibrate(Engine(loaded, PotConfig()))
    assert (fresh.layers, fresh.kv_heads) == (shipped.layers, shipped.kv_heads) == (30, 3)
    assert fresh.heads[0] == shipped.heads[0] and len(set(fresh.heads) & set(shipped.heads)) >= 3
    assert fresh.found >= 14 and fresh.facts == shipped.facts == 16
