"""Which model families are read: every checked family has a tiny model in the engine's tests, and every other
family transformers loads is refused before reading, in one line, with exit code 2 and nothing stored."""

import numpy as np
import pytest
from helpers import expect_one_line_error, run_json
from test_gguf_models import _finish, folders_in
from tiny_models import ARCHITECTURES, build_model, tiny_tokenizer
from transformers import FalconConfig, FalconForCausalLM

from infinipot.core.errors import ModelError
from infinipot.core.families import CHECKED_FAMILIES, family_of_gguf, unsupported_reason
from infinipot.core.gguf_models import gguf_architectures
from infinipot.core.model import ModelSpec, resolve_model_dir


def test_every_checked_family_has_a_tiny_model_in_the_engine_tests():
    """The equivalence checks (tests/test_engine.py, parametrized over ARCHITECTURES: a read 20x past the pot, and
    greedy answers equal to the model's own generation where the document fits) run on each family let in."""
    families = {build_model(arch).config.model_type for arch in ARCHITECTURES}
    assert families == set(CHECKED_FAMILIES)


def test_every_family_transformers_loads_from_gguf_is_checked_or_refused_in_one_sentence():
    loaded = {family_of_gguf(architecture) for architecture in gguf_architectures()}
    assert {"llama", "gemma3_text", "qwen2_moe"} <= loaded
    for family in sorted(loaded):
        reason = unsupported_reason(family)
        if family in CHECKED_FAMILIES:
            assert reason is None
        else:
            assert reason.startswith(f"{family} models are not supported yet: ") and "\n" not in reason
            assert "Gemma 3" in reason  # says what is supported


def write_mamba_gguf(path) -> None:
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "mamba")
    writer.add_name("Tiny Mamba")
    writer.add_tensor("token_embd.weight", np.ones((8, 4), dtype=np.float32))
    _finish(writer, path)


def test_a_gguf_of_a_refused_family_is_refused_before_converting(tmp_path, infinipot_home):
    model = tmp_path / "mamba.gguf"
    write_mamba_gguf(model)
    with pytest.raises(ModelError) as error:
        resolve_model_dir(ModelSpec(name=str(model)), infinipot_home)
    assert str(error.value).startswith(
        "mamba.gguf: mamba models are not supported yet: it has no attention, so there is no memory of keys and "
        "values to compress (supported: Llama, Mistral, Qwen2"
    )
    assert folders_in(infinipot_home / "models") == []


def test_the_cli_refuses_a_refused_family_in_one_line_with_exit_code_2_and_stores_nothing(
    capsys, tmp_path, document, infinipot_home
):
    folder = tmp_path / "tiny-falcon"
    config = FalconConfig(
        vocab_size=len(tiny_tokenizer()), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_kv_heads=2, new_decoder_architecture=True, alibi=False, bos_token_id=1, eos_token_id=3,
    )  # fmt: skip
    FalconForCausalLM(config).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    capsys.readouterr()  # the save's progress bar
    expect_one_line_error(
        capsys,
        ["read", str(document), "--model", str(folder)],
        "falcon models are not supported yet: its attention does not follow transformers' attention interface",
    )
    assert run_json(capsys, ["list", "--json"])["documents"] == []
