"""Context-Reset RoPE: move cached keys from the positions they were rotated at to new ones, exactly.

The cache stores post-RoPE keys k = R(p) k_pre, where R(p) acts on rotate-half pairs with cos c and sin s
(yarn scales both by its attention factor m, so R(p) is m times a rotation). Undoing it needs the inverse
(k c - rot(k) s) / (c^2 + s^2), which is exact for every scaling variant; then R(p') is applied anew.
"""

from __future__ import annotations

import torch


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the first cos.shape[-1] dims of x (..., D) (partial rotary keeps the rest as is)."""
    rot = cos.shape[-1]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return torch.cat((x_rot * cos + rotate_half(x_rot) * sin, x_pass), dim=-1)


def unapply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Inverse of apply_rotary for the same cos, sin."""
    rot = cos.shape[-1]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    restored = (x_rot * cos - rotate_half(x_rot) * sin) / (cos * cos + sin * sin)
    return torch.cat((restored, x_pass), dim=-1)


def rotation(cos_sin: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """R(p) in `rotate_in_place`'s form: cos and signed sin (..., rot)."""
    cos, sin = cos_sin
    return cos, _signed(sin)


def inverse_rotation(cos_sin: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """R(p)^-1 in `rotate_in_place`'s form: (c, -s) / (c^2 + s^2), exact for yarn's scaled cos/sin as well."""
    cos, sin = cos_sin
    norm = cos * cos + sin * sin  # (..., rot): 1, or yarn's m^2
    return cos / norm, _signed(-sin / norm)


def _signed(sin: torch.Tensor) -> torch.Tensor:
    """sin with its first half negated: rotate_half(x) * sin == roll(x, half) * _signed(sin)."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def rotate_in_place(x: torch.Tensor, *rotations: tuple[torch.Tensor, torch.Tensor]) -> None:
    """x (..., D) <- x rotated by each (cos, signed sin) (..., rot) in turn, on its first rot dims.

    Three ops a rotation instead of reposition_keys' dozen: on a CPU shared with other work every op waits for its
    threads, so the count matters as much as the bytes. fp32 works in place; other dtypes compute in fp32 and are
    rounded once at the end, as in reposition_keys.
    """
    rot = rotations[0][0].shape[-1]
    part = x[..., :rot]
    work = part if part.dtype == torch.float32 else part.float()
    for cos, signed_sin in rotations:
        swapped = work.roll(rot // 2, dims=-1)  # (..., rot): second half first
        work.mul_(cos).addcmul_(swapped, signed_sin)
    if work is not part:
        part.copy_(work)


def reposition_keys(
    keys: torch.Tensor,
    old_cos_sin: tuple[torch.Tensor, torch.Tensor],
    new_cos_sin: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """Keys (..., T, D) rotated at old positions -> the same keys rotated at new positions.

    cos/sin broadcast against keys' leading dims: (H, T, rot) for per-head positions. Computed in fp32 and
    cast back, so bf16 pots lose nothing beyond one rounding.
    """
    dtype = keys.dtype
    pre = unapply_rotary(keys.float(), *old_cos_sin)
    return apply_rotary(pre, *new_cos_sin).to(dtype)
