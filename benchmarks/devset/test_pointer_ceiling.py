"""The ceiling benchmark's bookkeeping: where a sentence's buckets are, and the rank and head choice it reports."""

from benchmarks.devset.pointer_ceiling import NOT_RANKED, StoredText, chosen_head_hits, gold_rank


class LetterTokenizer:
    """Each id is one character code: a PDF's odd spacing is just more ids."""

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


def stored(text: str) -> StoredText:
    return StoredText([ord(ch) for ch in text], LetterTokenizer())


def test_a_sentence_is_found_whatever_its_spacing_and_case():
    text = stored("aaaa bbbb The  Key\nis-42. cccc")
    at = text.ids.index(ord("T"))
    buckets = text.buckets_of("the key is 42", bucket_tokens=4)
    end = at + len("The  Key\nis-42") - 1
    assert buckets == set(range(at // 4, end // 4 + 1))
    assert text.buckets_of("not in it", bucket_tokens=4) == set()
    assert text.buckets_of("", bucket_tokens=4) == set()


def test_the_rank_is_the_best_gold_buckets_place():
    assert gold_rank([7, 3, 5, 1], {5, 1}) == 2
    assert gold_rank([7, 3], {5}) == NOT_RANKED


def test_a_head_is_chosen_on_one_half_and_scored_on_the_other():
    # Two heads (1 layer x 2): head 0 finds every even question's answer first, head 1 every odd one's.
    records = [{"head_ranks": [[0, 9]] if i % 2 == 0 else [[9, 0]]} for i in range(6)]
    assert chosen_head_hits(records, 1) == 0  # the head that won one half never finds the other half's
    same = [{"head_ranks": [[0, 9]]} for _ in range(6)]
    assert chosen_head_hits(same, 1) == 6
