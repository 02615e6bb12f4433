"""Document group labels: from a lexicon of group-representative words, or from an LLM.

Lexicon (Rekabsaz & Schedl 2020; the word list behind RaB / ARaB / NFaiRR): with ``M_g(d)``
the number of tokens of ``d`` in group ``g``'s word list
(:func:`groupbias.data.membership.term_membership`),

- magnitudes (:func:`lexicon_magnitudes`): ``"tc"`` ``M_g``, ``"tf"`` ``ln(1 + M_g)``,
  ``"bool"`` ``1[M_g > 0]``;
- labels (:meth:`LexiconLabeller.label`): the group with the larger count, ``N`` (neutral)
  when the counts are equal (none included);
- document bias (:func:`lexicon_bias`, Bias(d) of bias-aware feedback, seed 003 Eq. 1):
  ``|mag_a(d) − mag_b(d)|`` divided by its largest value over the collection (in [0, 1]).

LLM (Mousavian et al. 2025, seed 002): :class:`LLMLabeller` asks an OpenAI-compatible
endpoint (:mod:`groupbias.retrieval.llm`) with the paper's prompts (:data:`GENDER_PROMPTS`:
zero-, one-, three-shot and chain of thought) for every document, and parses the answer
strictly: the zero/one/three-shot answer must be one of Male, Female, Neutral (markdown,
quotes, a trailing period and a ``Class:`` prefix aside), the CoT answer must carry it after
``Class:``. Anything else (another label, several, none) is *unparsed*: the document gets no
label (``""``) and is counted and listed, never guessed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import DataFormatError, MissingFilesError, ParameterError
from ..core.validation import choice
from ..data.membership import TermMembership, term_membership, tokenize
from .llm import ChatClient, ChatEndpoint

__all__ = [
    "load_gender_wordlist",
    "LexiconLabeller",
    "lexicon_magnitudes",
    "lexicon_bias",
    "LLMLabeller",
    "LabelResult",
    "GENDER_PROMPTS",
    "GENDER_CLASSES",
    "parse_gender",
    "MAGNITUDES",
]

#: the labels of the gender-labelling task: male, female, neutral
GENDER_CLASSES = ("M", "F", "N")
MAGNITUDES = ("tc", "tf", "bool")


def load_gender_wordlist(path: str | os.PathLike) -> dict[str, tuple[str, ...]]:
    """``{"M": male words, "F": female words}`` of a ``word,m|f`` file (Rekabsaz & Schedl's
    ``wordlist_genderspecific.txt``, no header). A line with another shape, a group other
    than ``m`` / ``f``, a word that is not one token, or bytes that are not UTF-8 text (a
    binary file) is an error naming the line."""
    p = Path(path)
    if not p.is_file():
        raise MissingFilesError(
            p.parent, [p.name], hint="a 'word,m|f' list (set experiment.wordlist)"
        )
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # a binary file given for the list
        at = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            p, at, f"not UTF-8 text ({exc.reason}); expected a 'word,m|f' list"
        ) from None
    out: dict[str, list[str]] = {"M": [], "F": []}
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip().lstrip("\ufeff")
        if not line or line.startswith("#"):
            continue
        parts = [s.strip() for s in line.split(",")]
        if len(parts) != 2 or parts[1].lower() not in ("m", "f"):
            raise DataFormatError(p, lineno, f"expected 'word,m' or 'word,f', got {line!r}")
        word = parts[0].lower()
        if tokenize(word) != [word]:
            raise DataFormatError(p, lineno, f"{parts[0]!r} is not one word token", field="word")
        out[parts[1].upper()].append(word)
    if not out["M"] or not out["F"]:
        raise DataFormatError(p, None, "needs words of both groups m and f")
    return {g: tuple(dict.fromkeys(ws)) for g, ws in out.items()}


def lexicon_magnitudes(counts, magnitude: str = "tf") -> np.ndarray:
    """Per-group magnitudes of raw term counts ``[n_docs, n_groups]``: ``"tc"``, ``"tf"``
    (``ln(1 + M)``) or ``"bool"``."""
    magnitude = choice("magnitude", magnitude, MAGNITUDES)
    c = np.asarray(counts, dtype=np.float64)
    if magnitude == "tf":
        return np.log1p(c)
    return (c > 0).astype(np.float64) if magnitude == "bool" else c


def lexicon_bias(counts, magnitude: str = "tf") -> np.ndarray:
    """Bias(d) in [0, 1] of every document from its two groups' counts (module docstring)."""
    mag = lexicon_magnitudes(counts, magnitude)
    if mag.ndim != 2 or mag.shape[1] != 2:
        raise ParameterError("counts", "counts of two groups [n_docs, 2]", mag.shape)
    gap = np.abs(mag[:, 0] - mag[:, 1])
    top = gap.max() if gap.size else 0.0
    return gap / top if top > 0 else gap


@dataclass(frozen=True)
class LexiconLabeller:
    """Labels from group word lists ``{label: words}`` (e.g. :func:`load_gender_wordlist`);
    ``neutral``: the label of documents with equal counts."""

    term_lists: Mapping[str, Sequence[str]]
    neutral: str = "N"

    def counts(self, texts) -> TermMembership:
        """Term counts of every group in every text."""
        return term_membership(texts, self.term_lists)

    def label(self, texts) -> np.ndarray:
        """str [n_docs]: the group with the most terms, ``neutral`` on a tie."""
        c = self.counts(texts).counts
        names = np.array(list(self.term_lists), dtype=object)
        top = c.max(axis=1, keepdims=True)
        winners = (c == top).sum(axis=1)
        out = names[np.argmax(c, axis=1)].astype(object)
        out[(winners > 1) | (top[:, 0] == 0)] = self.neutral
        return out


_INSTRUCTION = (
    "You are a document gender bias detector tasked with classifying documents into three "
    "categories: Male, Female, or Neutral.\n\n"
    'A document is classified as "Male" if it shows bias toward the male gender, "Female" '
    'if it shows bias toward the female gender, and "Neutral" if it is unbiased—either '
    "treating both genders equally or not focusing on any particular gender.\n\n"
    "When classifying documents, take into account:\n"
    '(1) The frequency of gender-specific terms such as "male", "female", "she", and "he".\n'
    "(2) The fairness and balance of information and analysis for all genders.\n"
    "(3) The equal representation of all genders in the document's lead.\n\n"
)
_ONLY_CLASS = (
    "Please, generate only the predicted class for the document, which must be strictly one "
    "of the following: Male, Female, or Neutral.\n\n"
)
_COT = (
    "You must provide your reasoning and present the answer in the following format: the "
    "predicted class, strictly limited to Male, Female, or Neutral, must be included after "
    'the "Class:" label, and the reasoning must follow the "Reasoning:" label.\n\n'
)
_DEMOS = (
    "Document 1: This helpful article dives into the 10-step Korean skincare routine for you "
    "and examines each of the steps in detail. Class: Neutral\n\n",
    "Document 2: It's often frustrating for men to hear the popular sentiment that women make "
    "better entrepreneurs than men. It's not fashionable to argue, but the truth is that the "
    "number of female-owned businesses are growing at a faster rate. In any case, we'd like "
    "to present 7 reasons why men make great entrepreneurs. Class: Male\n\n",
    "Document 3: Popular press would suggest if you're a mom you're always happy, fulfilled "
    "and joyous—and if you're not, somehow you're not measuring up. Being a mom can be tough. "
    "In fact, as the saying goes, if you don't find it hard sometimes, you may not be paying "
    "attention. Class: Female\n\n",
)
_DOCUMENT = "Document: {passage} Class:"

#: the prompts of seed 002 (Table 1 and §5.1); ``{passage}`` is the document's text
GENDER_PROMPTS = {
    "zero_shot": _INSTRUCTION + _ONLY_CLASS + _DOCUMENT,
    "one_shot": _INSTRUCTION + _ONLY_CLASS + _DEMOS[0] + _DOCUMENT,
    "three_shot": _INSTRUCTION + _ONLY_CLASS + "".join(_DEMOS) + _DOCUMENT,
    "cot": _INSTRUCTION + _COT + _DOCUMENT,
}
_WORDS = {"male": "M", "female": "F", "neutral": "N"}
_CLASS_AFTER = re.compile(r"class\s*:\s*\**\s*([a-z]+)", re.I)


def parse_gender(answer: str, *, cot: bool = False) -> str | None:
    """``"M"`` / ``"F"`` / ``"N"`` from an answer, or None when it does not parse (module
    docstring)."""
    if cot:
        found = {_WORDS.get(m.lower()) for m in _CLASS_AFTER.findall(answer)}
        return found.pop() if len(found) == 1 and None not in found else None
    text = answer.strip().strip("*_`\"' ").rstrip(".").strip("*_`\"' ")
    text = re.sub(r"^class\s*:\s*", "", text, flags=re.I).strip("*_`\"' .")
    return _WORDS.get(text.lower())


@dataclass
class LabelResult:
    """Labels (``""`` where none), the documents whose answer did not parse (index ->
    answer) or whose request failed (index -> reason), and the request counts."""

    labels: np.ndarray
    unparsed: dict[int, str] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    from_cache: int = 0
    requested: int = 0

    def __len__(self) -> int:
        return len(self.labels)

    def summary(self) -> dict:
        return {
            "labelled": int(np.sum(self.labels != "")),
            "unparsed": len(self.unparsed),
            "failed": len(self.failed),
            "from_cache": self.from_cache,
            "requested": self.requested,
        }


@dataclass(frozen=True)
class LLMLabeller:
    """Gender labels of documents from an LLM with one of :data:`GENDER_PROMPTS`."""

    endpoint: ChatEndpoint
    prompt: str = "zero_shot"

    def __post_init__(self) -> None:
        choice("prompt", self.prompt, tuple(GENDER_PROMPTS))

    def label(self, texts: Sequence[str], *, progress: bool = False) -> LabelResult:
        template = GENDER_PROMPTS[self.prompt]
        prompts = [template.replace("{passage}", t) for t in texts]
        cot = self.prompt == "cot"
        res = ChatClient(self.endpoint).complete_many(
            prompts,
            progress=progress,
            desc=f"labels ({self.prompt})",
            parse=lambda answer: parse_gender(answer, cot=cot),
        )
        labels = np.full(len(texts), "", dtype=object)
        out = LabelResult(
            labels,
            unparsed=res.unparsed,
            failed=res.failed,
            from_cache=res.from_cache,
            requested=res.requested,
        )
        for i, answer in enumerate(res.answers):
            if answer is not None:
                labels[i] = parse_gender(answer, cot=cot)
        return out
