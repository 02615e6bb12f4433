"""Seed 002's Table 4 under every setting we could name: the NFaiRR neutrality score ω(d) as a
neutral / non-neutral classifier of Grep-BiasIR's documents (neutral iff ω = 1, against the
human labels), per text (title + document, document only), tokens (our ``\\w+`` tokens,
whitespace tokens, the BM25 analyzer's Porter stems with the word list stemmed alike), the
``both`` rows (no human label: 697 documents; neutral: 702) and threshold τ (0, 1, 2): 36
settings. The paper reports accuracy 0.5726 (κ 0.2703) and names none of these choices.

    python -m tools.neutrality_grid              # the table of docs/retrieval.md
"""

from __future__ import annotations

import numpy as np

TEXTS = {"title+document": "title + document", "document": "document only"}
TOKENS = ("\\w+", "whitespace", "Porter stems")
BOTH = ("unknown", "neutral")
TAUS = (0.0, 1.0, 2.0)
#: seed 002, Table 4 (accuracy) and Table 5 (κ, row NFaiRR)
PAPER = (0.5726, 0.2703)


def _tokenizer(name: str, words: dict):
    """``(tokenizer, word lists)`` of a token setting (None: :func:`tokenize`)."""
    if name == "\\w+":
        return None, words
    if name == "whitespace":
        return (lambda text: text.lower().split()), words
    from groupbias.retrieval.bm25 import Analyzer

    a = Analyzer(stopwords="none", stemmer="porter")
    stems = {g: sorted({s for w in ws for s in a.analyze([w])[0]}) for g, ws in words.items()}
    return (lambda text: a.analyze([text])[0]), stems


def measure() -> list[dict]:
    """One record per setting: ``text``, ``tokens``, ``both``, ``tau``, ``n``, ``accuracy``,
    ``kappa``."""
    from data_loaders.text_collections import load_grep_biasir
    from experiments.retrieval_common import wordlist
    from groupbias.data.membership import term_membership
    from groupbias.evaluation.fairness import neutrality
    from groupbias.evaluation.stats import label_agreement

    words = wordlist(None)
    binary = {"N": "neutral", "M": "non-neutral", "F": "non-neutral", "": ""}
    out = []
    for text in TEXTS:
        for both in BOTH:
            c = load_grep_biasir(None, both=both, text=text)
            truth = np.array([binary[g] for g in c.label("gender")], dtype=object)
            for tokens in TOKENS:
                split, lists = _tokenizer(tokens, words)
                counts = term_membership(list(c.texts), lists, tokenizer=split).counts
                for tau in TAUS:
                    omega = neutrality(counts, tau=tau)
                    pred = np.where(omega == 1.0, "neutral", "non-neutral").astype(object)
                    a = label_agreement(truth, pred, ("neutral", "non-neutral"))
                    out.append(
                        {"text": text, "tokens": tokens, "both": both, "tau": tau,
                         "n": a["n"], "accuracy": a["accuracy"], "kappa": a["kappa"]}
                    )  # fmt: skip
    return out


def table(records: list[dict]) -> str:
    """The markdown of docs/retrieval.md: one row per text × tokens × both, accuracy (κ) per
    τ, then the range and the setting nearest the paper's accuracy."""
    from experiments.common import markdown

    cell = {(r["text"], r["tokens"], r["both"], r["tau"]): r for r in records}
    rows = []
    for text, label in TEXTS.items():
        for tokens in TOKENS:
            for both in BOTH:
                got = [cell[(text, tokens, both, tau)] for tau in TAUS]
                name = "excluded" if both == "unknown" else "neutral"
                rows.append(
                    [label, f"`{tokens}`", f"{name} ({got[0]['n']})"]
                    + [f"{r['accuracy']:.4f} ({r['kappa']:.3f})" for r in got]
                )
    head = ["text", "tokens", "`both` rows (n)", *(f"τ = {t:g}" for t in TAUS)]
    acc = [r["accuracy"] for r in records]
    near = min(records, key=lambda r: abs(r["accuracy"] - PAPER[0]))
    note = (
        f"{len(records)} settings, accuracy {min(acc):.4f} – {max(acc):.4f}; nearest to the "
        f"paper's {PAPER[0]:.4f} (κ {PAPER[1]:.4f}): {TEXTS[near['text']]}, `{near['tokens']}`, "
        f"τ = {near['tau']:g}, n = {near['n']}: {near['accuracy']:.4f} (κ {near['kappa']:.4f})."
    )
    return f"{markdown(head, rows)}\n\n{note}"


if __name__ == "__main__":
    print(table(measure()))
