"""Decoding speed with one-row products as matrix-vector products (core.precision.one_row_products), and the same
tokens and logits as without.

    python -m benchmarks.one_row_products [--home DIR] [--rounds 6] [--tokens 40] [--prompt 750]
        [--dtypes bfloat16,float32] [--ttft]

--home defaults to infinipot-stored-pot-bench in the system's temp folder (where benchmarks.stored_pot_ttft keeps
the converted default model). For each dtype the default model reads a `--prompt`-token prompt and decodes
`--tokens` tokens greedily, `--rounds` times with the model's nn.Linear layers as they load (one-row products) and
as plain nn.Linear, in turn, so a slower spell of a shared machine falls on both. Prints the median milliseconds per
decoded token of each and whether both decoded the same tokens with bit-identical last logits.

--ttft also times the second question of benchmarks.stored_pot_ttft on the 100K-token pot it stored under --home
(run it first), in the warm app's default answer mode, `--rounds` times each way in turn.
"""

from __future__ import annotations

import torch

from benchmarks.decoding_ab import compare
from infinipot.core import generate
from infinipot.core.precision import _OneRowLinear


def set_products(model, one_row: bool) -> None:
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.__class__ = _OneRowLinear if one_row else torch.nn.Linear


def main() -> None:
    generate.decoded_hidden = lambda *args: None  # the modules' products (benchmarks.one_token_decoder: the other)
    compare(__doc__, ("plain nn.Linear", "one-row products"), set_products, lambda model: set_products(model, True))


if __name__ == "__main__":
    main()
