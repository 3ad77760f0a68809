"""BenchFill's novelty screen: how close each candidate is to the bank's items and to the other candidates.

Two similarities between texts, both in [0, 1], computed with rapidfuzz:

- **word similarity** ``1 - d / n``: ``d`` is the word-level edit distance (Levenshtein over the lower-cased
  alphanumeric words, each word one symbol) and ``n`` the longer text's word count. It measures verbatim
  overlap: changing one number in a 10-word question gives 0.9.
- **content similarity**: rapidfuzz's ``token_set_ratio`` / 100 over the content words (stop words removed,
  a final "ing", "ed", "es" or "s" cut where four letters remain), which stays high when a text is
  reworded around the same content.

A candidate is

- a **near-duplicate** of an item when at most :data:`NEAR_DUPLICATE_EDITS` words differ and at least
  :data:`NEAR_DUPLICATE_KEEP` of the longer text's words are kept (a number or a word or two changed), or
  when its word similarity is at least :data:`NEAR_DUPLICATE_SIMILARITY` (a long item with a few changes);
- a **rewrite** of an item when it is not a near-duplicate, its content similarity is at least
  :data:`REWRITE_SIMILARITY`, and the two share at least :data:`REWRITE_OVERLAP` of the longer one's content
  words (``token_set_ratio`` alone is 1 whenever one text's words are all in the other, as a short question's
  are in a long passage);
- **novel** otherwise.

The thresholds are checked on ``tests/fixtures/benchfill_novelty_pairs.csv``: 72 benchmark-style pairs
labelled near-duplicate, rewrite or unrelated (24 each; the unrelated items are from the same kinds of
benchmark, several with the same template). Measured there: near-duplicates found with precision 1.0 and
recall 1.0; rewrites with precision 1.0 and recall 0.5. Surface similarity misses paraphrases that share
few words (half of the labelled rewrites), so a rewrite the screen does not see passes as novel: the
ledger's ``closest_item`` and similarities are there for a reader to check. Against a large bank the many
comparisons raise the chance of a false rewrite: on an adversarial bank of 12,000 random word strings drawn
from the labelled set's 497-word vocabulary, 134 of 1.2 million pairs (1.1e-4) were called rewrites (without
the overlap condition: 756). ``allow_rewrites=True`` records rewrites without rejecting them.

Decisions (:func:`screen_novelty`): a near-duplicate of a bank item is rejected as ``"near-duplicate of
ITEM"``, whichever item it copies; a rewrite is allowed when the item it rewrites is the candidate's own seed
(BenchFill asked for a rewrite of it), and rejected as ``"rewrite of ITEM"`` otherwise (it adds little that
the bank does not hold); a candidate that is a near-duplicate of an earlier candidate (in the order given)
is rejected as ``"near-duplicate of candidate ID"``. When the bank's items have no text, nothing is compared
with the bank and every row says so (``novelty = "not checked: ..."``); candidates are still compared with
one another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from irtbayes.core.errors import SpecError

__all__ = [
    "NEAR_DUPLICATE_EDITS",
    "NEAR_DUPLICATE_KEEP",
    "NEAR_DUPLICATE_SIMILARITY",
    "REWRITE_OVERLAP",
    "REWRITE_SIMILARITY",
    "classify_pair",
    "content_similarity",
    "screen_novelty",
    "word_similarity",
]

#: Near-duplicate: at most this many words differ ...
NEAR_DUPLICATE_EDITS = 2
#: ... with at least this share of the longer text's words kept,
NEAR_DUPLICATE_KEEP = 0.6
#: or a word similarity at least this high.
NEAR_DUPLICATE_SIMILARITY = 0.8
#: Rewrite: content similarity at least this high (and not a near-duplicate) ...
REWRITE_SIMILARITY = 0.7
#: ... with at least this share of the longer text's content words in common.
REWRITE_OVERLAP = 0.25
#: What the novelty column says when the bank has no item texts.
NO_BANK_TEXT = "not checked: the bank's items have no text"

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been do does did what which who whom how "
    "many much if it its this that these those there their his her you your as into than then can any have has "
    "one same all".split()
)
_SUFFIXES = ("ing", "ed", "es", "s")


def _words(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _content(text: str) -> str:
    return " ".join(_stem(w) for w in _words(text) if w not in _STOP)


def _word_matrix(queries: Sequence[str], choices: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(word edit distance, word similarity) of every query against every choice."""
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    q = [_words(t) for t in queries]
    c = [_words(t) for t in choices]
    if not q or not c:
        empty = np.zeros((len(q), len(c)))
        return empty, empty
    dist = process.cdist(q, c, scorer=Levenshtein.distance, workers=1, dtype=np.int64).astype(float)
    longer = np.maximum.outer(np.array([len(x) for x in q]), np.array([len(x) for x in c])).astype(float)
    sim = np.where(longer > 0, 1.0 - dist / np.maximum(longer, 1.0), 1.0)
    return dist, sim


def _content_matrix(queries: Sequence[str], choices: Sequence[str]) -> np.ndarray:
    from rapidfuzz import fuzz, process

    if not queries or not choices:
        return np.zeros((len(queries), len(choices)))
    scores = process.cdist(
        [_content(t) for t in queries], [_content(t) for t in choices], scorer=fuzz.token_set_ratio, workers=1
    )
    return np.asarray(scores, dtype=float) / 100.0


def _overlap(a: str, b: str) -> float:
    """Shared content words as a share of the longer text's (distinct) content words."""
    words_a, words_b = set(_content(a).split()), set(_content(b).split())
    return len(words_a & words_b) / max(1, len(words_a), len(words_b))


def _rewrite_matrix(queries: Sequence[str], choices: Sequence[str], content: np.ndarray) -> np.ndarray:
    """Which (query, choice) pairs are rewrites by content similarity and overlap (near-duplicates not excluded)."""
    out = content >= REWRITE_SIMILARITY
    for i, j in zip(*np.nonzero(out), strict=True):
        out[i, j] = _overlap(queries[i], choices[j]) >= REWRITE_OVERLAP
    return out


def word_similarity(a: str, b: str) -> float:
    """Word-level similarity ``1 - d / n`` of two texts (see the module notes).

    Examples
    --------
    >>> question = "What is the capital of France?"
    >>> round(word_similarity(question, question), 3)
    1.0
    >>> round(word_similarity(question, "What is the capital city of France?"), 3)  # one word added: 1 - 1/7
    0.857
    >>> round(word_similarity(question, "France: what is its capital?"), 3)  # word order counts
    0.333
    """
    return float(_word_matrix([a], [b])[1][0, 0])


def content_similarity(a: str, b: str) -> float:
    """Content-word similarity of two texts (see the module notes).

    Examples
    --------
    >>> question = "What is the capital of France?"
    >>> round(content_similarity(question, "France: what is its capital?"), 3)  # same content words, reordered
    1.0
    >>> content_similarity(question, "Which river flows through Cairo?") < 0.5
    True
    """
    return float(_content_matrix([a], [b])[0, 0])


def _near(dist: np.ndarray, sim: np.ndarray) -> np.ndarray:
    return ((dist <= NEAR_DUPLICATE_EDITS) & (sim >= NEAR_DUPLICATE_KEEP)) | (sim >= NEAR_DUPLICATE_SIMILARITY)


def classify_pair(a: str, b: str) -> str:
    """``"near-duplicate"``, ``"rewrite"`` or ``"unrelated"`` for two texts, by the thresholds above.

    Examples
    --------
    >>> from irtbayes.benchfill.novelty import classify_pair
    >>> classify_pair("What is the capital of France?", "What is the capital of France?")
    'near-duplicate'
    >>> classify_pair("What is the capital of France?", "Which river flows through Cairo?")
    'unrelated'
    """
    dist, sim = _word_matrix([a], [b])
    if bool(_near(dist, sim)[0, 0]):
        return "near-duplicate"
    rewrite = content_similarity(a, b) >= REWRITE_SIMILARITY and _overlap(a, b) >= REWRITE_OVERLAP
    return "rewrite" if rewrite else "unrelated"


def _bank_texts(bank: Mapping[str, str | None] | pd.Series) -> pd.Series:
    series = pd.Series(bank, dtype=object) if not isinstance(bank, pd.Series) else bank.astype(object)
    series.index = series.index.astype(str)
    keep = series.notna() & series.astype(str).str.strip().ne("")
    return series[keep].astype(str)


def screen_novelty(
    candidates: pd.DataFrame,
    bank: Mapping[str, str | None] | pd.Series,
    *,
    allow_rewrites: bool = False,
) -> pd.DataFrame:
    """Compare each candidate with every bank item and every other candidate, and decide on novelty.

    Parameters
    ----------
    candidates
        One row per candidate, index ``candidate_id``, columns ``text`` and (optional) ``seed_item``: the bank
        item BenchFill asked the source to rewrite or take after.
    bank
        The bank's item texts by item id; missing or blank texts are left out.
    allow_rewrites
        Accept a rewrite of a bank item that is not the candidate's seed (it is still named in ``novelty``);
        by default it is rejected. Near-duplicates are rejected either way.

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``novelty`` (``"novel"``, ``"rewrite of seed ITEM"``, ``"near-duplicate of
        ITEM"``, ``"rewrite of ITEM"``, ``"near-duplicate of candidate ID"``, or ``"not checked: ..."``),
        ``novelty_ok`` (bool), ``closest_item`` (the bank item with the highest similarity, the larger of
        the two), ``closest_word_similarity``, ``closest_content_similarity``, ``closest_text``,
        ``closest_candidate`` and ``closest_candidate_similarity`` (word similarity). ``attrs`` record the
        thresholds and ``bank_texts`` (how many bank items had a text).

    Raises
    ------
    SpecError
        ``candidates`` without a ``text`` column.

    Examples
    --------
    >>> from irtbayes.benchfill.novelty import screen_novelty
    >>> candidates = pd.DataFrame(
    ...     {"text": ["What is the capital of France?", "Which river flows through Cairo?"]},
    ...     index=pd.Index(["c1", "c2"], name="candidate_id"),
    ... )
    >>> bank = {"q1": "What is the capital of France?", "q2": "How many legs does a spider have?"}
    >>> screen_novelty(candidates, bank)[["novelty", "novelty_ok"]]
                               novelty  novelty_ok
    candidate_id
    c1            near-duplicate of q1       False
    c2                           novel        True
    """
    if "text" not in candidates.columns:
        raise SpecError("screen_novelty: the candidates need a 'text' column")
    ids = [str(i) for i in candidates.index]
    texts = candidates["text"].fillna("").astype(str).tolist()
    seeds = candidates["seed_item"] if "seed_item" in candidates.columns else pd.Series(None, index=candidates.index)
    bank_text = _bank_texts(bank)
    out = _blank_screen(ids)
    if len(bank_text):
        _screen_bank(out, texts, bank_text, seeds, allow_rewrites=allow_rewrites)
    else:
        out["novelty"] = NO_BANK_TEXT
    if len(ids) > 1:
        _screen_candidates(out, texts)
    out["novelty_ok"] = out["novelty_ok"].astype(bool)
    out.attrs.update(
        near_duplicate_edits=NEAR_DUPLICATE_EDITS,
        near_duplicate_keep=NEAR_DUPLICATE_KEEP,
        near_duplicate_similarity=NEAR_DUPLICATE_SIMILARITY,
        rewrite_similarity=REWRITE_SIMILARITY,
        rewrite_overlap=REWRITE_OVERLAP,
        allow_rewrites=allow_rewrites,
        bank_texts=len(bank_text),
    )
    return out


def _blank_screen(ids: list[str]) -> pd.DataFrame:
    """The screen's table before any comparison: every candidate novel, nothing closest."""
    out = pd.DataFrame(index=pd.Index(ids, name="candidate_id"))
    out["novelty"] = "novel"
    out["novelty_ok"] = True
    for col in ("closest_item", "closest_text", "closest_candidate"):
        out[col] = pd.Series(None, index=out.index, dtype=object)
    for col in ("closest_word_similarity", "closest_content_similarity", "closest_candidate_similarity"):
        out[col] = np.nan
    return out


def _screen_bank(
    out: pd.DataFrame, texts: list[str], bank_text: pd.Series, seeds: pd.Series, *, allow_rewrites: bool
) -> None:
    """Fill ``out`` in place with each candidate's closest bank item and its novelty against the bank."""
    dist, sim = _word_matrix(texts, bank_text.tolist())
    content = _content_matrix(texts, bank_text.tolist())
    near = _near(dist, sim)
    rewrite = _rewrite_matrix(texts, bank_text.tolist(), content)
    best = np.argmax(np.maximum(sim, content), axis=1)
    rows = np.arange(len(texts))
    out["closest_item"] = bank_text.index[best].to_numpy()
    out["closest_text"] = bank_text.to_numpy()[best]
    out["closest_word_similarity"] = sim[rows, best]
    out["closest_content_similarity"] = content[rows, best]
    for k, cid in enumerate(out.index):
        verdict, ok = _verdict(near[k], rewrite[k], content[k], sim[k], bank_text.index, seeds.iloc[k])
        out.loc[cid, ["novelty", "novelty_ok"]] = (
            verdict,
            ok or (allow_rewrites and verdict.startswith("rewrite")),
        )


def _screen_candidates(out: pd.DataFrame, texts: list[str]) -> None:
    """Fill ``out`` in place with each candidate's closest other candidate; reject near-duplicates of earlier ones."""
    ids = list(out.index)
    dist, sim = _word_matrix(texts, texts)
    np.fill_diagonal(sim, -np.inf)
    near = _near(dist, sim)
    best = np.argmax(sim, axis=1)
    out["closest_candidate"] = [ids[j] for j in best]
    out["closest_candidate_similarity"] = sim[np.arange(len(ids)), best]
    for k, cid in enumerate(ids):
        earlier = [j for j in range(k) if near[k, j] and bool(out.iloc[j]["novelty_ok"])]
        if earlier and bool(out.loc[cid, "novelty_ok"]):
            out.loc[cid, ["novelty", "novelty_ok"]] = (f"near-duplicate of candidate {ids[earlier[0]]}", False)


def _verdict(
    near: np.ndarray, rewrite: np.ndarray, content: np.ndarray, sim: np.ndarray, items: pd.Index, seed: object
) -> tuple[str, bool]:
    """One candidate's novelty against the bank: (text, ok)."""
    if near.any():
        k = int(np.argmax(np.where(near, sim, -np.inf)))
        return f"near-duplicate of {items[k]}", False
    rewrites = np.flatnonzero(rewrite)
    if rewrites.size == 0:
        return "novel", True
    seed_id = None if seed is None or (isinstance(seed, float) and np.isnan(seed)) else str(seed)
    others = [int(k) for k in rewrites if str(items[k]) != seed_id]
    if not others:
        return f"rewrite of seed {seed_id}", True
    k = max(others, key=lambda j: content[j])
    return f"rewrite of {items[k]}", False
