"""The answer stage: from a question and a document's stored pot to a sentence of the document, or "not found".

The path of one question (the default mode, `evidence`; app/ask/pipeline.py drives it and adds the files):

    question ──► evidence.candidate_spans ── the question's attention over the pot (retrieval_heads pick the
       │           heads that point, citations.answer_attention reads them) and its words over the stored
       │           token ids (word_match) rank 64-token buckets; up to 12 candidate spans, each widened to
       │           whole units as the document writes them (text_units: a term with its description, a row)
       ▼
    evidence.spans_read ── the reranker (rerank, the model's batched
       │           likelihoods) scores how likely the question is after each span alone;
       │           the best 3 are read, each with its neighbour sentences
       ▼
    grounded_answer.checking ── the judge (answer_sentences) ranks every unit of the 3 passages by how likely the
       │           question is after it alone; the calibrated decision (answer_confidence) weighs the best
       │           three with signals any document has: the judge's margins, the kind asked (question_kind),
       │           the question's words and rare names (question_names, grounding); in doubt the writer
       │           (written_answer) writes a short answer of its own, never shown, whose agreement counts;
       │           it returns the verdict
       ▼
    grounded_answer.final_answer ── a sentence of the document, stated ("confident"; answer_state "stated"),
    the passage that seems to answer ("closest"), or "No direct answer found" with the closest one
    ("not_found"). Where a head was fitted for the model (core.answer.learned_judge, trained by benchmarks/judge),
    it decides instead of the calibrated signals

The stage sits on the engine: it imports core's engine, pot and word tools, and nothing below it imports the
stage back but core.summary, which cuts a document into units as the stage does; the engine itself, which reads
and generates, reaches none of it, directly or not (tests/test_layering.py).
Everything here reads the pot and the document; nothing changes them. A Stop from the app ends any of these
passes within a layer of the model (core.stopping).
"""
