"""GGUF files given to --model: converted once (exactly: the same answers as the same weights from safetensors),
cached by content hash, refused with one line when not GGUF, truncated or of an architecture transformers cannot
load; and `infinipot models` listing and deleting what was converted."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import expect_one_line_error, run_json
from tiny_models import build_model, tiny_tokenizer

from infinipot.app.cli import main
from infinipot.app.library.retrieval_heads import RetrievalHeadsShelf
from infinipot.core import gguf_models
from infinipot.core.answer.retrieval_heads import RetrievalHeads
from infinipot.core.errors import ModelError
from infinipot.core.model import ModelSpec, load_model, resolve_model_dir

A_DAY_AGO = time.time() - 86_400  # model files people have are old; a fresh one's hash is not remembered (racy)


def llama_cpp_permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's convert reorders each head's q/k rows from halves to interleaved pairs for its RoPE;
    transformers' GGUF loader undoes it, so a file written without it would load with scrambled heads."""
    rows = weights.shape[0]
    return weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def tokenizer_metadata(writer) -> None:
    """The tiny byte-level BPE tokenizer as llama.cpp writes a GPT-2 style one: tokens, types, merges, ids."""
    from gguf import TokenType

    tokenizer = tiny_tokenizer()
    vocab = tokenizer.backend_tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    special = set(tokenizer.all_special_tokens)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([TokenType.CONTROL if token in special else TokenType.NORMAL for token in tokens])
    writer.add_token_merges([merge if isinstance(merge, str) else " ".join(merge) for merge in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_chat_template(tokenizer.chat_template)


def write_llama_gguf(path: Path, seed: int = 0, leave_out: str = "", parts: int = 1) -> torch.nn.Module:
    """The tiny random-weight Llama as a float32 GGUF, llama.cpp's tensor names and q/k row order; returns the
    model whose weights it holds. `leave_out` names a tensor not written; `parts` > 1 marks it one part of a split."""
    from gguf import GGUFWriter

    model = build_model("llama", seed=seed)
    config = model.config
    weights = {name: tensor.detach().float().numpy() for name, tensor in model.state_dict().items()}
    writer = GGUFWriter(str(path), "llama")
    writer.add_name("Tiny Llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_vocab_size(config.vocab_size)
    if parts > 1:
        writer.add_uint16("split.count", parts)
    tokenizer_metadata(writer)

    def add(name: str, tensor: np.ndarray) -> None:
        if name != leave_out:
            writer.add_tensor(name, tensor)

    add("token_embd.weight", weights["model.embed_tokens.weight"])
    for i in range(config.num_hidden_layers):
        layer = f"model.layers.{i}."
        q = llama_cpp_permute(weights[layer + "self_attn.q_proj.weight"], config.num_attention_heads)
        k = llama_cpp_permute(weights[layer + "self_attn.k_proj.weight"], config.num_key_value_heads)
        add(f"blk.{i}.attn_norm.weight", weights[layer + "input_layernorm.weight"])
        add(f"blk.{i}.attn_q.weight", q)
        add(f"blk.{i}.attn_k.weight", k)
        add(f"blk.{i}.attn_v.weight", weights[layer + "self_attn.v_proj.weight"])
        add(f"blk.{i}.attn_output.weight", weights[layer + "self_attn.o_proj.weight"])
        add(f"blk.{i}.ffn_norm.weight", weights[layer + "post_attention_layernorm.weight"])
        add(f"blk.{i}.ffn_gate.weight", weights[layer + "mlp.gate_proj.weight"])
        add(f"blk.{i}.ffn_up.weight", weights[layer + "mlp.up_proj.weight"])
        add(f"blk.{i}.ffn_down.weight", weights[layer + "mlp.down_proj.weight"])
    add("output_norm.weight", weights["model.norm.weight"])
    add("output.weight", weights["lm_head.weight"])
    _finish(writer, path)
    return model


def write_unsupported_gguf(path: Path) -> None:
    """A well-formed GGUF of an architecture transformers has no GGUF loader for."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "rwkv7")
    writer.add_name("Tiny RWKV")
    writer.add_tensor("token_embd.weight", np.ones((8, 4), dtype=np.float32))
    _finish(writer, path)


def _finish(writer, path: Path) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.utime(path, (A_DAY_AGO, A_DAY_AGO))


def sha256_prefix(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[: gguf_models.HASH_PREFIX_DIGITS]


def folders_in(models: Path) -> list[str]:
    """Every folder under models/, staging folders (.converting-*) included."""
    return sorted(p.name for p in models.iterdir() if p.is_dir()) if models.exists() else []


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"
    write_llama_gguf(path)
    return path


def greedy_ids(loaded, max_new_tokens: int = 16) -> list[int]:
    messages = [{"role": "user", "content": "What is the passkey? Answer from the text above."}]
    prompt = tiny_tokenizer().apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = torch.tensor([tiny_tokenizer()(prompt, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        out = loaded.model.generate(ids, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def test_gguf_answers_equal_the_same_weights_from_safetensors(tiny_gguf, tmp_path, infinipot_home):
    reference_folder = tmp_path / "reference"
    build_model("llama").save_pretrained(reference_folder)
    tiny_tokenizer().save_pretrained(reference_folder)
    reference = load_model(ModelSpec(name=str(reference_folder), device="cpu", dtype="float32"), infinipot_home)

    from_gguf = load_model(ModelSpec(name=str(tiny_gguf), device="cpu", dtype="float32"), infinipot_home)

    assert from_gguf.identity == f"tiny-llama-{sha256_prefix(tiny_gguf)}"
    assert folders_in(infinipot_home / "models") == [from_gguf.identity]
    # the q/k row order round trip is exact (llama.cpp's permutation, undone by transformers)
    for name, weight in reference.model.state_dict().items():
        assert torch.equal(from_gguf.model.state_dict()[name], weight), name
    assert greedy_ids(from_gguf) == greedy_ids(reference)
    text = "The quick brown fox jumps over the lazy dog. What is the passkey?"
    assert from_gguf.tokenizer(text)["input_ids"] == tiny_tokenizer()(text)["input_ids"]
    assert from_gguf.tokenizer.eos_token == "<|im_end|>"
    assert from_gguf.tokenizer.chat_template == tiny_tokenizer().chat_template
    source = json.loads((infinipot_home / "models" / from_gguf.identity / "infinipot-source.json").read_text())
    assert source["path"] == str(tiny_gguf.resolve()) and source["architecture"] == "llama"


def test_the_cache_is_reused_without_converting_or_hashing_again(tiny_gguf, tmp_path, infinipot_home, monkeypatch):
    first, identity = resolve_model_dir(ModelSpec(name=str(tiny_gguf)), infinipot_home)
    stamp = (Path(first) / "model.safetensors").stat().st_mtime_ns

    def must_not_run(*args, **kwargs):
        raise AssertionError("converted or hashed a second time")

    monkeypatch.setattr(gguf_models, "convert_gguf", must_not_run)
    monkeypatch.setattr(gguf_models.hashlib, "sha256", must_not_run)  # the hash index answers for the same file
    assert resolve_model_dir(ModelSpec(name=str(tiny_gguf)), infinipot_home) == (first, identity)
    assert (Path(first) / "model.safetensors").stat().st_mtime_ns == stamp

    monkeypatch.undo()  # a renamed copy is hashed (a new path) but found by its content: not converted again
    monkeypatch.setattr(gguf_models, "convert_gguf", must_not_run)
    copy = tmp_path / "renamed.gguf"
    copy.write_bytes(tiny_gguf.read_bytes())
    assert resolve_model_dir(ModelSpec(name=str(copy)), infinipot_home) == (first, identity)


def test_a_changed_file_gets_a_new_cache_entry(tmp_path, infinipot_home):
    path = tmp_path / "model.gguf"
    write_llama_gguf(path, seed=0)
    before, old_identity = resolve_model_dir(ModelSpec(name=str(path)), infinipot_home)
    write_llama_gguf(path, seed=1)  # same size, other weights, another (older) mtime
    os.utime(path, (A_DAY_AGO - 60, A_DAY_AGO - 60))
    after, new_identity = resolve_model_dir(ModelSpec(name=str(path)), infinipot_home)
    assert new_identity != old_identity and after != before
    assert new_identity == f"model-{sha256_prefix(path)}"
    assert folders_in(infinipot_home / "models") == sorted([old_identity, new_identity])


def _not_gguf(path: Path) -> None:
    path.write_text("Line 1: the quick brown fox jumps over the lazy dog.\n")


def _truncated(path: Path) -> None:
    write_llama_gguf(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _weight_left_out(path: Path) -> None:
    write_llama_gguf(path, leave_out="blk.1.ffn_up.weight")


def _split(path: Path) -> None:
    write_llama_gguf(path, parts=2)


@pytest.mark.parametrize(
    "make, fragment",
    [
        (_not_gguf, "bad.gguf is not a gguf file"),
        (_truncated, "bad.gguf is truncated or damaged ("),
        (write_unsupported_gguf, "bad.gguf holds a rwkv7 model, which transformers cannot load from gguf; supported:"),
        (_weight_left_out, "bad.gguf lacks weights its llama model needs (model.layers.1.mlp.up_proj.weight)"),
        (_split, "bad.gguf is one part of a gguf split into 2 files"),
    ],
    ids=["not-gguf", "truncated", "unsupported-architecture", "weight-left-out", "split"],
)
def test_a_bad_file_is_one_clear_line_and_leaves_nothing_in_the_cache(make, fragment, tmp_path, infinipot_home):
    bad = tmp_path / "bad.gguf"
    make(bad)
    with pytest.raises(ModelError) as error:
        resolve_model_dir(ModelSpec(name=str(bad)), infinipot_home)
    message = str(error.value)
    assert "\n" not in message and fragment in message.lower(), message
    if make is write_unsupported_gguf:
        assert "llama" in message and "qwen2" in message and "phi3" in message and "general" not in message
    assert folders_in(infinipot_home / "models") == []


def test_the_cli_shows_a_bad_model_file_as_one_line(capsys, tmp_path, document):
    bad = tmp_path / "notes-renamed.gguf"
    _not_gguf(bad)
    expect_one_line_error(capsys, ["read", str(document), "--model", str(bad)], "is not a gguf file")
    expect_one_line_error(capsys, ["read", str(document), "--model", str(tmp_path / "missing.gguf")], "does not exist")


def test_the_cli_reads_and_answers_with_a_gguf_model(capsys, tiny_gguf, document):
    read_args = ["read", str(document), "--model", str(tiny_gguf), "--pot-size", "128", "--keep", "48", "--json"]
    first = run_json(capsys, read_args)
    assert first["reused"] is False and first["cycles"] > 0
    assert run_json(capsys, read_args)["reused"] is True  # the same identity finds the stored pot
    listing = run_json(capsys, ["list", "--json"])
    (pot,) = listing["documents"][0]["pots"]
    assert pot["model_identity"].startswith(f"tiny-llama-{sha256_prefix(tiny_gguf)}")
    question = ["ask", first["doc_id"], "What does the fox do?", "--model", str(tiny_gguf), "--pot-size", "128"]
    answer = run_json(capsys, question + ["--keep", "48", "--max-new-tokens", "4", "--json"])
    assert answer["reused_pot"] is True


def test_a_gguf_file_named_by_a_path_relative_to_the_working_folder_reads(capsys, tmp_path, monkeypatch):
    """The bundled GGUF copied into models/ below the working folder: `--model models/small.gguf` is that file,
    never a hub id (transformers joins its gguf_file to the folder: 'models does not appear to have a file named
    models/small.gguf'); a mistyped relative path says that it does not exist, in one line."""
    import shutil

    from infinipot.core.model import default_gguf_path

    monkeypatch.setenv("INFINIPOT_HOME", str(tmp_path / "home"))
    (tmp_path / "models").mkdir()
    shutil.copyfile(default_gguf_path(), tmp_path / "models" / "small.gguf")
    (tmp_path / "note.txt").write_text("The blue gate's code is 4412. The ferry leaves at noon.\n")
    monkeypatch.chdir(tmp_path)
    report = run_json(capsys, ["read", "note.txt", "--model", "models/small.gguf", "--dtype", "float32", "--json"])
    assert report["tokens"] > 10 and report["reused"] is False
    (pot,) = run_json(capsys, ["list", "--json"])["documents"][0]["pots"]
    assert pot["model_identity"].startswith("small-")  # the file's name and its content hash
    expect_one_line_error(capsys, ["read", "note.txt", "--model", "models/smal.gguf"], "does not exist")
    expect_one_line_error(
        capsys, ["read", "note.txt", "--model", "models/small"], "model path models/small does not exist"
    )
    expect_one_line_error(capsys, ["read", "note.txt", "--model", "./small.gguf"], "does not exist")


def test_an_interrupted_conversion_leaves_no_folder(tiny_gguf, infinipot_home, monkeypatch):
    from transformers import PreTrainedTokenizerBase

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C after the weights were written, before the tokenizer

    monkeypatch.setattr(PreTrainedTokenizerBase, "save_pretrained", interrupt)
    with pytest.raises(KeyboardInterrupt):
        resolve_model_dir(ModelSpec(name=str(tiny_gguf)), infinipot_home)
    assert folders_in(infinipot_home / "models") == []


# -- `infinipot models` -----------------------------------------------------------------------------------------
def test_models_lists_and_deletes_converted_models(capsys, tiny_gguf, infinipot_home):
    assert main(["models"]) == 0
    assert "no converted models yet" in capsys.readouterr().out

    _, identity = resolve_model_dir(ModelSpec(name=str(tiny_gguf)), infinipot_home)
    folder = infinipot_home / "models" / identity
    capsys.readouterr()  # the conversion's progress bar
    assert main(["models"]) == 0
    line, described = capsys.readouterr().out.strip().splitlines()
    size_kb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1024
    assert line == f"{identity}  {size_kb:,.1f} KB  from {tiny_gguf.resolve()}"
    # it carries a chat template; the decision was fitted on the bundled model, not on it
    assert described == "  chat model; answers decided strictly (the decision was fitted on the bundled model)"

    assert main(["models", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["models"]
    assert listed["name"] == identity and listed["source"] == str(tiny_gguf.resolve()) and listed["disk_bytes"] > 0
    assert listed["follows_instructions"] is True and listed["decided"] == "strict"
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    for template in folder.glob("chat_template.*"):
        template.unlink()
    capsys.readouterr()
    assert main(["models"]) == 0
    assert "base model (no chat template): it writes poorly" in capsys.readouterr().out

    heads = RetrievalHeadsShelf(infinipot_home).stored_path(identity)  # its calibration, kept beside the models
    heads.parent.mkdir(parents=True)
    heads.write_text(json.dumps(RetrievalHeads(((1, 0),), 2, 2, 4, 3, 0.5).to_dict()))
    assert main(["models", "--delete", identity]) == 0
    assert capsys.readouterr().out.startswith(f"deleted {identity}: ")
    assert not folder.exists() and not heads.exists()
    assert main(["models"]) == 0
    assert "no converted models yet" in capsys.readouterr().out


def test_models_delete_refuses_unknown_names_and_paths(capsys, tiny_gguf, infinipot_home, tmp_path):
    _, identity = resolve_model_dir(ModelSpec(name=str(tiny_gguf)), infinipot_home)
    outside = tmp_path / "keep-me"
    outside.mkdir()
    (outside / "config.json").write_text("{}")
    capsys.readouterr()  # the conversion's progress bar
    expect_one_line_error(capsys, ["models", "--delete", "no-such-model"], "no converted model is named")
    expect_one_line_error(capsys, ["models", "--delete", f"../../{outside.name}"], "is not a model name")
    expect_one_line_error(capsys, ["models", "--delete", ".."], "is not a model name")
    assert outside.is_dir() and (infinipot_home / "models" / identity).is_dir()


def test_the_app_settings_take_a_gguf_file(tiny_gguf, tmp_path):
    from infinipot.app.web.settings import ReadSettings

    assert ReadSettings(model=str(tiny_gguf)).model_name() == str(tiny_gguf.resolve())
    bad = tmp_path / "notes.gguf"
    _not_gguf(bad)
    with pytest.raises(ValueError, match="notes.gguf is not a GGUF file"):
        ReadSettings(model=str(bad)).model_name()
    with pytest.raises(ValueError, match="does not exist"):
        ReadSettings(model=str(tmp_path / "missing.gguf")).model_name()
