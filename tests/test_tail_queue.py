"""TailQueue against a plain list: the newest `size` ids pushed are held, and `skipped` counts the rest."""

import pytest

from infinipot.core.tail_queue import TailQueue

SIZE = 8


def reference(pieces: list[list[int]], size: int) -> tuple[list[int], int]:
    """The held ids and skipped count of a queue given `pieces`, from the whole stream as one list."""
    stream = [token for piece in pieces for token in piece]
    held = stream[-size:] if size else []
    return held, len(stream) - len(held)


def pieces_of(lengths: list[int]) -> list[list[int]]:
    """Consecutive ids 0, 1, 2, ... cut into pieces of `lengths`, so every id says where it came from."""
    pieces, start = [], 0
    for length in lengths:
        pieces.append(list(range(start, start + length)))
        start += length
    return pieces


@pytest.mark.parametrize(
    "lengths",
    [
        [SIZE // 2 + 1],  # shorter than the tail but longer than half of it
        [SIZE - 1],
        [SIZE // 2 + 1, SIZE // 2 + 2],
        [SIZE - 1, SIZE - 1, SIZE - 1],
        [SIZE],
        [SIZE + 3],  # longer than the tail
        [3 * SIZE + 1],
        [2, SIZE - 2, 1, SIZE + 5, SIZE // 2 + 1, 0, 7],  # mixed
        [SIZE // 2 + 1, 1, SIZE - 1, SIZE + 1, SIZE // 2 + 3],
        [1, 1, 1],  # never fills the tail: nothing skipped
        [],
    ],
)
def test_queue_holds_the_newest_ids_pushed_and_counts_the_skipped_ones(lengths):
    pieces = pieces_of(lengths)
    queue = TailQueue(SIZE)
    for piece in pieces:
        queue.push(piece)
    assert queue.drain() == reference(pieces, SIZE)


def test_every_piece_length_up_to_twice_the_tail_keeps_its_newest_ids():
    for length in range(2 * SIZE + 1):
        queue = TailQueue(SIZE)
        queue.push(list(range(length)))
        held, skipped = queue.drain()
        assert held == list(range(max(0, length - SIZE), length)), length
        assert skipped == max(0, length - SIZE), length


def test_drain_empties_the_queue_for_the_next_pushes():
    queue = TailQueue(SIZE)
    queue.push(list(range(SIZE + 2)))
    queue.drain()
    queue.push([100, 101, 102, 103, 104, 105])
    assert queue.drain() == ([100, 101, 102, 103, 104, 105], 0)
    assert queue.drain() == ([], 0)


def test_a_tail_of_size_zero_holds_nothing_and_skips_everything():
    queue = TailQueue(0)
    queue.push([1, 2, 3])
    queue.push([4])
    assert queue.drain() == ([], 4)


def test_a_negative_tail_size_is_refused():
    with pytest.raises(ValueError, match="must not be negative"):
        TailQueue(-1)
