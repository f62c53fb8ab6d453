"""Which float type the model runs in, and how many CPU threads it uses.

bfloat16 halves the memory traffic of every matrix product; where the CPU multiplies bf16 natively (AMX or
AVX512-BF16 on x86, the BF16 extension on Arm) a read runs about 2.5 times faster than in float32. Where it
does not, torch emulates bf16 through fp32 conversions and is slower than plain fp32, so `auto` asks the
CPU's feature flags (what torch itself detects) rather than guessing from the architecture.
"""

from __future__ import annotations

import functools
import os
import subprocess

import torch

DTYPES = ("auto", "float32", "bfloat16")
DTYPE_VARIABLE = "INFINIPOT_DTYPE"  # what `auto` means on this machine, when set
_BY_NAME = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# Stored pots of a model run in float32 keep the bare model identity (the pots stored before the dtype was a
# choice stay reusable); any other dtype is appended to it, so a bf16 pot never answers for an fp32 run.
_KEY_SEPARATOR = "@"


def check_dtype_name(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return name


def cpu_features() -> dict:
    """torch's own view of the CPU (its kernels dispatch on these); empty where torch does not expose it."""
    try:
        return dict(torch._C._cpu._get_cpu_capability())
    except (AttributeError, RuntimeError):
        return {}


def native_bf16_cpu(features: dict | None = None) -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AMX-BF16, AVX512-BF16, Arm BF16)."""
    features = cpu_features() if features is None else features
    if features.get("amx_bf16") or features.get("avx512_bf16"):
        return True
    if features.get("architecture") in ("aarch64", "arm64") or os.uname().machine in ("aarch64", "arm64"):
        return _arm_has_bf16()
    return False


@functools.cache  # reads /proc/cpuinfo or runs sysctl; the answer does not change while the process runs
def _arm_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            return any(line.startswith("Features") and " bf16" in line for line in cpuinfo)
    except OSError:  # macOS: Apple M2 and later have FEAT_BF16
        try:
            found = subprocess.run(
                ["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True, text=True, timeout=5
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return found.stdout.strip() == "1"


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """The dtype a model runs in: `auto` is $INFINIPOT_DTYPE when set (a machine-wide choice), else bf16 on CUDA
    and on CPUs with native bf16, fp32 elsewhere."""
    check_dtype_name(name)
    if name == "auto":
        name = os.environ.get(DTYPE_VARIABLE, "auto") or "auto"
        if name not in DTYPES:
            raise ValueError(f"{DTYPE_VARIABLE} must be one of {', '.join(DTYPES)}, got {name!r}")
    if name != "auto":
        return _BY_NAME[name]
    if device.type == "cuda" or native_bf16_cpu():
        return torch.bfloat16
    return torch.float32


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def pot_key(identity: str, dtype: torch.dtype) -> str:
    """The model part of a stored pot's reuse key: the weights' identity and, unless float32, the dtype."""
    return identity if dtype == torch.float32 else f"{identity}{_KEY_SEPARATOR}{dtype_name(dtype)}"


def dtype_in_key(key: str) -> str:
    """The dtype name a stored pot was read in, from its model key (see pot_key)."""
    _, separator, name = key.rpartition(_KEY_SEPARATOR)
    return name if separator and name in _BY_NAME else "float32"


def physical_cores() -> int:
    """Cores, not hardware threads: a second thread on the same core only slows dense matrix products."""
    cores = cpu_features().get("num_physical_cores")
    return int(cores) if cores else max(1, (os.cpu_count() or 2) // 2)


def set_threads(threads: int | None) -> int:
    """Use `threads` CPU threads. None: $OMP_NUM_THREADS when set (torch already follows it), else one per
    physical core, at most the CPUs this process may run on."""
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if threads is None and os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    if threads is None:
        allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        threads = max(1, min(physical_cores(), allowed))
    torch.set_num_threads(threads)
    return threads


class _OneRowLinear(torch.nn.Linear):
    """nn.Linear whose one-row products (a token decoded alone) run as a matrix-vector product.

    On a CPU, a bfloat16 product with one row goes through the same blocked matrix kernel as a long prompt, and
    that kernel is slow for a single row: decoding the bundled 135M model in bf16 on two AMX cores took 38.7 ms a
    token, against 32.8 ms with torch.mv, with the same tokens and logits bit for bit (docs/experiments.md).
    In float32 both reach the same kernel (36.2 against 37.4 ms), so float32 models are left as they are. Rows of a
    prompt keep the matrix kernel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[:-1].numel() != 1 or x.device.type != "cpu":
            return super().forward(x)
        flat = x.reshape(-1)  # (in,)
        y = torch.mv(self.weight, flat) if self.bias is None else torch.addmv(self.bias, self.weight, flat)  # (out,)
        return y.view(*x.shape[:-1], -1)


def one_row_products(model: torch.nn.Module) -> torch.nn.Module:
    """Make every plain nn.Linear of a CPU model compute one-row products as matrix-vector products (_OneRowLinear);
    the weights stay where they are, shared (a tied output head stays tied). Returns the model."""
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.__class__ = _OneRowLinear
    return model
