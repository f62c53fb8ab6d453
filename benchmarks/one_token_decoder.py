"""Decoding speed with the lean one-token decoder (core.one_token) against the model's own forward, and the same
tokens and logits.

    python -m benchmarks.one_token_decoder [--home DIR] [--rounds 6] [--tokens 40] [--prompt 750]
        [--dtypes bfloat16,float32] [--ttft]

--home defaults to infinipot-stored-pot-bench in the system's temp folder (where benchmarks.stored_pot_ttft keeps
the converted default model). For each dtype the default model reads a `--prompt`-token prompt and decodes
`--tokens` tokens greedily, `--rounds` times through transformers' forward and through core.one_token, in turn, so
a slower spell of a shared machine falls on both. Prints the median milliseconds per decoded token of each and
whether both decoded the same tokens with bit-identical last logits.

--ttft also times the second question of benchmarks.stored_pot_ttft on the 100K-token pot it stored under --home
(run it first), in the warm app's default answer mode, `--rounds` times each way in turn: that question's answer is
checked against 29 tokens the writer decodes (core.grounded_answer), so decoding is part of its first token.
"""

from __future__ import annotations

from benchmarks.decoding_ab import compare
from infinipot.core import generate, one_token


def decoding_way(_model, lean: bool) -> None:
    """Decode through core.one_token (True) or through transformers' forward (False)."""
    generate.decoded_hidden = one_token.decoded_hidden if lean else (lambda *args: None)


def main() -> None:
    compare(
        __doc__,
        ("model's forward", "one-token decoder"),
        decoding_way,
        lambda model: decoding_way(model, True),
        applies=lambda model: one_token.one_token_decoder(model) is not None,
    )


if __name__ == "__main__":
    main()
