"""The retrieval side: runs of a text collection, ranked, refined and labelled for bias.

:mod:`~groupbias.retrieval.bm25` (``Analyzer``, ``BM25Index``, ``PyseriniSearcher``),
:mod:`~groupbias.retrieval.expansion` (RM3 and bias-aware pseudo-relevance feedback),
:mod:`~groupbias.retrieval.rerank` (MMR, FA*IR), :mod:`~groupbias.retrieval.fair_qr`
(FAIR-QR and its refiners), :mod:`~groupbias.retrieval.labels` (lexicon and LLM gender
labels) and :mod:`~groupbias.retrieval.llm` (the OpenAI-compatible endpoint client, cached).
Text collections and runs themselves are :mod:`groupbias.data.text`.
"""
