"""Drafts of the next answer tokens, copied from the prompt: where the answer's newest tokens also occur in the
prompt, the tokens that followed them there are proposed as the answer's next ones (prompt lookup decoding).

An answer about passages copies them in runs ("... commanded by Captain Josiah Pell"), and on a CPU one forward
over a token and a few drafted ones costs little more than a forward over the token alone (the weights are read
once either way: 84 ms against 90 ms with 8 drafted for the bundled model in bfloat16 on two cores, one probe).
core.generate reads the draft with the token, keeps each drafted token that the decoding chooses anyway, and drops
the rest from the cache, so the answer is the one decoding token by token gives, up to rounding; only the number
of forwards falls. Off by default (core.decoding.DecodingConfig.copy_draft says why).
"""

from __future__ import annotations

from collections.abc import Sequence


class CopyDrafts:
    """Proposes up to `length` tokens after the answer's newest `longest`..`shortest` tokens, from where they last
    occur in `source` (a longer match first: it is likelier to be the passage the answer is copying).

    A draft is not free: on two cores a forward over a token and 8 more cost up to 1.5x one over the token alone in
    bfloat16 and 2x in float32, so a wrong draft costs time. A single token is a weak match (it drafts often and
    is often wrong): replayed on the development set's written answers, drafting only after 2 or more kept the
    float32 cost below token by token (docs/experiments.md, "Copy drafts")."""

    def __init__(self, source: Sequence[int], length: int, longest: int = 3, shortest: int = 2) -> None:
        if length < 1:
            raise ValueError(f"a draft needs at least 1 token, got {length}")
        if not 1 <= shortest <= longest:
            raise ValueError(f"a draft follows a match of 1 <= shortest <= longest tokens, got {shortest}, {longest}")
        self.source = list(source)
        self.length = length
        self.longest = longest
        self.shortest = shortest
        # n -> the n tokens -> where the token after their last occurrence is (always inside source).
        self._after: dict[int, dict[tuple[int, ...], int]] = {}
        for n in range(shortest, longest + 1):
            after: dict[tuple[int, ...], int] = {}
            for end in range(n, len(self.source)):
                after[tuple(self.source[end - n : end])] = end
            self._after[n] = after

    def propose(self, answer: Sequence[int], most: int | None = None) -> list[int]:
        """The draft after `answer` (its ids so far), at most `most` tokens (None: `length`); [] when no tail of
        the answer occurs in the source."""
        most = self.length if most is None else min(most, self.length)
        if most < 1:
            return []
        for n in range(min(self.longest, len(answer)), self.shortest - 1, -1):
            start = self._after[n].get(tuple(answer[len(answer) - n :]))
            if start is not None:
                return self.source[start : start + most]
        return []
