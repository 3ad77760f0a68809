"""BenchFill's editorial screens: novelty, construct, and the verdict that joins them to the acceptance rule.

**Novelty** (:func:`screen_novelty`): how close each candidate is to the bank's items and to the other
candidates.

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

**Construct** (:func:`screen_construct`): does a candidate measure what its benchmark measures?

One ability dimension: **item fit from the posterior predictive**. The responding systems are split by
posterior mean ability into up to :data:`ITEM_FIT_GROUPS` groups of (nearly) equal size, at least
:data:`ITEM_FIT_MIN_PER_GROUP` systems each. For each of up to ``max_draws`` posterior draws s (evenly
spaced; a candidate's draw s is paired with draw s of the abilities, as in the before/after audit), with
``P_js = c + (1 - c) sigmoid(a (theta_js - b))``, the discrepancy is

    D(y, s) = sum over groups g of (O_g - E_gs)^2 / V_gs,

``O_g`` the sum of the group's responses, ``E_gs`` the sum of ``P_js`` and ``V_gs`` the sum of
``P_js (1 - P_js)``. Replicated responses ``y_rep ~ Bernoulli(P_js)`` give ``D(y_rep, s)``; the posterior
predictive p-value is ``P(D(y_rep) >= D(y))``. A candidate whose responses do not follow the model's curve
(for example right for weak and strong systems and wrong for those between) gets a small p-value and is
rejected as ``"off-construct"`` (poor item fit) when it is below :data:`ITEM_FIT_PPP`. Posterior predictive
p-values are conservative (they pile up near 0.5 for items that fit), so the rate of good items rejected is
below :data:`ITEM_FIT_PPP`. Fractional responses enter as their sums; the replicates are 0/1. A response of k
successes of n trials weighs its n trials: it enters as k, with ``n P_js`` in ``E_gs``, ``n P_js (1 - P_js)`` in
``V_gs`` and a replicate ``~ Binomial(n, P_js)`` (as n systems of its ability answering once would). A graded
candidate (a GRM or GPCM refit) enters with its category codes: ``E_gs`` and ``V_gs`` are the sums of the
model's expected score and its variance over the categories at the item's thresholds, and the replicates are
categories drawn from the model's probabilities.

Several ability dimensions (one per domain): **the candidate's own dimension must carry it**. For each
dimension d the sign-free slope ``s_d`` of ``P = sigmoid(s_d theta_d + k)`` is computed on the grid of the
calibration (the systems' ability posteriors on dimension d, each marginalised over ``ability_points``
quantiles; a response of k successes of n trials as its n trials, k right and n - k wrong), and the candidate is
rejected as ``"off-construct"`` when another dimension's slope exceeds its own with posterior probability at least
:data:`CONSTRUCT_PROB` (draws of different dimensions paired at random). Dimensions of correlated abilities give
similar slopes; the rule rejects only when the data say credibly that the candidate follows another domain's
ability more than its own.

**The editorial verdict** (:func:`combine_screens`): the acceptance rule, the novelty screen and the
construct screen together.

A candidate is accepted only when all three pass:

- **bin** and **key** (:func:`~irtbayes.benchfill.acceptance.decide_all`): enough responses, in the aim
  interval under both priors, and a sign-free slope credibly above the least one; the key check is the
  rule's own slope screen (``"mis-keyed"``, ``"flat"``, ``"slope missing"``), not a second one;
- **novelty** (:func:`screen_novelty`): not a near-duplicate of a bank item or of
  an earlier candidate, and not a rewrite of a bank item it was not asked to rewrite;
- **construct** (:func:`screen_construct`): its responses fit the model (one
  dimension), or its own domain's ability carries it (several).

Every failing check is listed in ``failed`` in this order: ``"not enough responses"``, the novelty verdict
(``"near-duplicate of ITEM"``, ``"rewrite of ITEM"``, ``"near-duplicate of candidate ID"``), ``"mis-keyed"``,
``"off-construct"``, the location (``"too easy"``, ``"too hard"``, ``"uncertain"``, ``"prior-driven"``,
``"data-alone missing"``), ``"flat"`` / ``"slope missing"``; ``reason`` is the first. A copy is named before
anything its responses say (it adds nothing wherever it sits); an off-construct item before its location
(where an item that measures something else sits says little). The columns ``bin_check``, ``key_check``,
``novelty`` and ``construct`` give each screen's own verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.benchfill.calibration import trial_rows
from irtbayes.benchfill.grid import SAMPLE_DIMS, SLOPE_GRID_POINTS, flatten_samples, grid_slope_draws
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.irt import graded_probabilities, probability
from irtbayes.core.summaries import spaced
from irtbayes.data.responses import ResponseData

__all__ = [
    "CONSTRUCT_PROB",
    "ITEM_FIT_GROUPS",
    "ITEM_FIT_MIN_PER_GROUP",
    "ITEM_FIT_PPP",
    "KEY_REASONS",
    "LOCATION_REASONS",
    "NEAR_DUPLICATE_EDITS",
    "NEAR_DUPLICATE_KEEP",
    "NEAR_DUPLICATE_SIMILARITY",
    "REWRITE_OVERLAP",
    "REWRITE_SIMILARITY",
    "classify_pair",
    "combine_screens",
    "content_similarity",
    "dimension_check",
    "item_fit",
    "screen_construct",
    "screen_novelty",
    "word_similarity",
]


# ============================================================================================================ novelty
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
    >>> from irtbayes.benchfill.screens import classify_pair
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
    >>> from irtbayes.benchfill.screens import screen_novelty
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


# ========================================================================================================== construct
#: Poor item fit: posterior predictive p-value below this.
ITEM_FIT_PPP = 0.01
#: Ability groups of the item-fit discrepancy, and the least systems per group (fewer: fewer groups).
ITEM_FIT_GROUPS = 5
ITEM_FIT_MIN_PER_GROUP = 10
#: Off-construct: another dimension's slope above the own one's with at least this posterior probability.
CONSTRUCT_PROB = 0.9


def _responses(
    new_data: ResponseData, item: int, subject_pos: np.ndarray, *, shares: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The responding subjects' positions, their responses to ``item`` (``shares``: as shares of its maximum) and
    their numbers of trials (None when every response of ``new_data`` is one trial; the responses are then the
    shares k / n)."""
    mask = new_data.item_codes == item
    values = new_data.shares if shares else new_data.values
    trials = new_data.trials[mask] if new_data.has_trials else None
    return subject_pos[new_data.subject_codes[mask]], values[mask].astype("float64"), trials


def _moments_and_replicates(
    params: dict[str, np.ndarray],
    theta: np.ndarray,
    pick: np.ndarray,
    rng: np.random.Generator,
    *,
    kind: str | None,
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected, variance, replicate) of each response (s, n_j) under draws ``pick`` of the item's parameters:
    a binary item's P, P (1 - P) and 0/1 replicates (with ``trials`` n, (n_j,): n P, n P (1 - P) and binomial
    replicates of the successes); a graded item's expected category, its variance and categories drawn from the
    model."""
    a = params["discrimination"][pick][:, None]
    if kind is None:
        b = params["difficulty"][pick][:, None]
        c = params["guessing"][pick][:, None] if "guessing" in params else None
        p = probability(theta, b, a, c)
        if trials is not None:  # k successes of n trials: binomial moments and replicates
            n = np.broadcast_to(trials.astype("int64"), p.shape)
            return n * p, n * p * (1.0 - p), rng.binomial(n, np.clip(p, 0.0, 1.0)).astype(float)
        return p, p * (1.0 - p), (rng.random(p.shape) < p).astype(float)
    thresholds = params["threshold"][pick][:, None, :]  # (s, 1, K - 1)
    probs = graded_probabilities(theta, a, thresholds, kind=kind)  # (s, n_j, K)
    k = np.arange(probs.shape[-1], dtype="float64")
    expected = probs @ k
    variance = probs @ (k**2) - expected**2
    # a category per response: the first whose cumulative probability reaches a uniform draw
    draw = rng.random(expected.shape)[..., None]
    replicate = np.minimum((np.cumsum(probs, axis=-1) < draw).sum(axis=-1), probs.shape[-1] - 1).astype(float)
    return expected, variance, replicate


def _subject_positions(ability: xr.DataArray, new_data: ResponseData) -> np.ndarray:
    subjects = pd.Index([str(s) for s in ability["subject"].values])
    pos = subjects.get_indexer([str(s) for s in new_data.subject_ids])
    if (pos < 0).any():
        missing = [str(s) for s, p in zip(new_data.subject_ids, pos, strict=True) if p < 0]
        raise DataError(f"{new_data.source}: subject(s) {missing[:10]} have no ability draws")
    return pos


def item_fit(
    ability: xr.DataArray,
    items: xr.Dataset,
    new_data: ResponseData,
    *,
    max_draws: int = 400,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Posterior predictive item fit of each candidate (one ability dimension; see the module notes).

    Parameters
    ----------
    ability
        Ability draws (chain, draw, subject).
    items
        The candidates' ``difficulty`` and ``discrimination`` draws (and ``guessing``, 3PL) over (chain, draw,
        item); a graded refit's also ``threshold`` (chain, draw, item, boundary), with ``attrs["model_kind"]``.
    new_data
        The candidates' responses.

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``item_fit_ppp`` (NaN when too few systems answered for two groups),
        ``item_fit_groups``, ``item_fit_discrepancy`` (mean of ``D(y, s)`` over the draws).
    """
    rng = np.random.default_rng(seed)
    kind = _graded_kind(items)
    n_categories = new_data.n_categories
    theta_all = flatten_samples(ability, "subject")  # (S, subject)
    n_total = theta_all.shape[0]
    rows = spaced(n_total, max_draws)
    subject_pos = _subject_positions(ability, new_data)
    out = []
    for i, item in enumerate(new_data.item_ids):
        params = {
            name: flatten_samples(items[name].sel(item=item))
            for name in ("difficulty", "discrimination", "guessing")
            if name in items
        }
        if kind is not None:  # the item's own thresholds (NaN-padded past its categories)
            n_thresholds = int(n_categories[i]) - 1
            params["threshold"] = flatten_samples(items["threshold"].sel(item=item), "boundary")[:, :n_thresholds]
        n_item = len(params["difficulty"])
        who, y, trials = _responses(new_data, i, subject_pos)
        if trials is not None:  # k of n: the successes, each response weighing its trials (one trial: as it is)
            y = np.where(trials > 1, np.round(y * trials), y)
        theta = theta_all[np.ix_(rows, who)]  # (s, n_j)
        pick = rows % n_item
        p, variance, replicated = _moments_and_replicates(params, theta, pick, rng, kind=kind, trials=trials)
        n_groups = min(ITEM_FIT_GROUPS, len(y) // ITEM_FIT_MIN_PER_GROUP)
        record = {"candidate_id": str(item), "item_fit_groups": n_groups}
        if n_groups < 2:
            out.append(record | {"item_fit_ppp": np.nan, "item_fit_discrepancy": np.nan})
            continue
        order = np.argsort(theta_all[:, who].mean(axis=0), kind="stable")
        group = np.empty(len(y), dtype=int)
        group[order] = np.arange(len(y)) * n_groups // len(y)
        onehot = np.eye(n_groups)[group]  # (n_j, G)
        expected = p @ onehot
        var = np.maximum(variance @ onehot, 1e-12)
        observed = y @ onehot
        replicate = replicated @ onehot
        d_obs = (((observed[None, :] - expected) ** 2) / var).sum(axis=1)
        d_rep = (((replicate - expected) ** 2) / var).sum(axis=1)
        out.append(
            record | {"item_fit_ppp": float(np.mean(d_rep >= d_obs)), "item_fit_discrepancy": float(d_obs.mean())}
        )
    return pd.DataFrame(out).set_index("candidate_id")


def _graded_kind(items: xr.Dataset) -> str | None:
    """``"grm"`` or ``"gpcm"`` for a graded candidates' posterior (it has ``threshold`` draws), else None."""
    if "threshold" not in items.data_vars:
        return None
    kind = items.attrs.get("model_kind")
    if kind not in ("grm", "gpcm"):
        raise DataError("the candidates' posterior has thresholds but does not say its model (attrs 'model_kind')")
    return str(kind)


def dimension_check(
    ability: xr.DataArray,
    new_data: ResponseData,
    *,
    ability_points: int = 16,
    n_draws: int = 1000,
    seed: int | None = 0,
) -> pd.DataFrame:
    """The sign-free slope of each candidate on every ability dimension (several dimensions; module notes).

    Parameters
    ----------
    ability
        Ability draws (chain, draw, subject, dim); the dimensions are the domains.
    new_data
        The candidates' responses; each candidate's ``domain`` names its own dimension.

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``own_dimension``, ``strongest_dimension`` (the highest mean slope),
        ``p_other_stronger`` (the largest ``P(s_d > s_own)`` over the other dimensions), and
        ``slope_<dim>_mean`` for every dimension.

    Raises
    ------
    DataError
        A candidate whose domain is not a dimension of the fit.
    """
    rng = np.random.default_rng(seed)
    dims = [str(d) for d in ability["dim"].values]
    probs = (np.arange(ability_points) + 0.5) / ability_points
    quant = np.quantile(flatten_samples(ability, "subject", "dim"), probs, axis=0)  # (Q, subject, dim)
    subject_pos = _subject_positions(ability, new_data)
    domains = new_data.items["domain"] if "domain" in new_data.items.columns else pd.Series(dtype=object)
    out = []
    for i, item in enumerate(new_data.item_ids):
        own = domains.get(item)
        own = None if own is None or pd.isna(own) else str(own)
        if own not in dims:
            raise DataError(
                f"{new_data.source}: candidate '{item}' has domain {own!r}, which is not an ability dimension of "
                f"the fit {dims}"
            )
        who, y, trials = _responses(new_data, i, subject_pos, shares=True)
        slopes = {}
        for k, d in enumerate(dims):
            y_k, theta_k = (y, quant[:, who, k].T) if trials is None else trial_rows(y, trials, quant[:, who, k].T)
            slopes[d] = grid_slope_draws(theta_k, y_k, None, n_draws=n_draws, grid_points=SLOPE_GRID_POINTS, rng=rng)
        mine = slopes[own]
        p_other = max(
            (float(np.mean(rng.permutation(slopes[d]) > mine)) for d in dims if d != own),
            default=0.0,
        )
        record = {
            "candidate_id": str(item),
            "own_dimension": own,
            "strongest_dimension": max(dims, key=lambda d: float(slopes[d].mean())),
            "p_other_stronger": p_other,
        }
        out.append(record | {f"slope_{d}_mean": float(slopes[d].mean()) for d in dims})
    return pd.DataFrame(out).set_index("candidate_id")


def screen_construct(
    ability: xr.DataArray,
    items: xr.Dataset,
    new_data: ResponseData,
    *,
    seed: int | None = 0,
) -> pd.DataFrame:
    """The construct verdict of each answered candidate: item fit (one dimension) or dimension check (several).

    Returns
    -------
    pandas.DataFrame
        Index ``candidate_id``: ``construct`` (``"on-construct"``, ``"off-construct: ..."`` or ``"not checked:
        ..."``), ``construct_ok`` (bool: False only when off-construct), ``item_fit_ppp`` and
        ``p_other_stronger`` (NaN where not computed), ``strongest_dimension``.
    """
    if not set(SAMPLE_DIMS) <= set(ability.dims):
        raise DataError("screen_construct: ability draws need chain and draw dimensions")
    ids = pd.Index([str(i) for i in new_data.item_ids], name="candidate_id")
    out = pd.DataFrame(index=ids)
    out["item_fit_ppp"] = np.nan
    out["p_other_stronger"] = np.nan
    out["strongest_dimension"] = pd.Series(None, index=ids, dtype=object)
    if "dim" in ability.dims and ability.sizes["dim"] > 1:
        check = dimension_check(ability, new_data, seed=seed)
        out["p_other_stronger"] = check["p_other_stronger"]
        out["strongest_dimension"] = check["strongest_dimension"]
        off = check["p_other_stronger"] >= CONSTRUCT_PROB
        out["construct"] = [
            f"off-construct: follows dimension '{row['strongest_dimension']}' more than its own '{row['own_dimension']}' "
            f"(P = {row['p_other_stronger']:.2f})"
            if bad
            else "on-construct"
            for (_, row), bad in zip(check.iterrows(), off, strict=True)
        ]
        out["construct_ok"] = ~off.to_numpy()
        return out
    missing = [name for name in ("difficulty", "discrimination") if name not in items.data_vars]
    if missing:
        out["construct"] = f"not checked: the posterior has no {' or '.join(missing)} draws for the item-fit check"
        out["construct_ok"] = True
        return out
    one = ability.isel(dim=0, drop=True) if "dim" in ability.dims else ability
    fit = item_fit(one, items, new_data, seed=seed)
    out["item_fit_ppp"] = fit["item_fit_ppp"]
    poor = fit["item_fit_ppp"] < ITEM_FIT_PPP
    out["construct"] = [
        "not checked: too few responses for the item-fit check"
        if np.isnan(ppp)
        else (f"off-construct: poor item fit (posterior predictive p = {ppp:.3f})" if bad else "on-construct")
        for ppp, bad in zip(fit["item_fit_ppp"], poor, strict=True)
    ]
    out["construct_ok"] = ~poor.to_numpy()
    return out


# ============================================================================================== the editorial verdict
#: The acceptance rule's reasons that concern the answer key (the sign-free slope).
KEY_REASONS = ("mis-keyed", "flat", "slope missing")
#: The acceptance rule's reasons that concern the location (the bin).
LOCATION_REASONS = ("too easy", "too hard", "uncertain", "prior-driven", "data-alone missing")


def _failed_list(value: object) -> list[str]:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    return [part for part in str(value).split("; ") if part]


def combine_screens(decisions: pd.DataFrame, novelty: pd.DataFrame, construct: pd.DataFrame) -> pd.DataFrame:
    """The acceptance rule's decisions with the novelty and construct screens folded in.

    Parameters
    ----------
    decisions
        One row per candidate (index ``candidate_id``) with ``decision``, ``reason``, ``detail`` and ``failed``
        (``"; "``-joined) from the acceptance rule.
    novelty
        :func:`~irtbayes.benchfill.screens.screen_novelty` for the same candidates.
    construct
        :func:`~irtbayes.benchfill.screens.screen_construct` for the answered candidates (others get
        ``"not checked: no responses"``).

    Returns
    -------
    pandas.DataFrame
        ``decisions`` with ``decision``, ``reason``, ``failed`` and ``detail`` updated and the columns
        ``bin_check``, ``key_check``, the novelty columns and ``construct``, ``item_fit_ppp``,
        ``p_other_stronger``, ``strongest_dimension`` added.

    Examples
    --------
    A candidate the acceptance rule accepted is still rejected when it copies a bank item:

    >>> from irtbayes.benchfill.screens import combine_screens
    >>> from irtbayes.benchfill.screens import screen_novelty
    >>> ids = pd.Index(["c1", "c2"], name="candidate_id")
    >>> decisions = pd.DataFrame({"decision": "accepted", "reason": "in aim", "detail": "", "failed": ""}, index=ids)
    >>> novelty = screen_novelty(pd.DataFrame({"text": ["What is the capital of France?", "Which river flows through Cairo?"]}, index=ids), {"q1": "What is the capital of France?"})
    >>> construct = pd.DataFrame({"construct": ["fits", "fits"], "construct_ok": [True, True]}, index=ids)
    >>> combine_screens(decisions, novelty, construct)[["decision", "reason"]]
                  decision                reason
    candidate_id
    c1            rejected  near-duplicate of q1
    c2            accepted                in aim
    """
    out = decisions.copy()
    ids = out.index
    nov = novelty.reindex(ids)
    con = construct.reindex(ids)
    con["construct"] = con["construct"].astype(object).where(con["construct"].notna(), "not checked: no responses")
    con["construct_ok"] = con["construct_ok"].astype(object).where(con["construct_ok"].notna(), True).astype(bool)
    bins, keys, failed_all, reasons, details = [], [], [], [], []
    for cid in ids:
        rule = _failed_list(out.at[cid, "failed"])
        bins.append(next((f for f in rule if f in LOCATION_REASONS or f == "not enough responses"), "in aim"))
        keys.append(next((f for f in rule if f in KEY_REASONS), "ok"))
        failed = [f for f in rule if f == "not enough responses"]
        if not bool(nov.at[cid, "novelty_ok"]):
            failed.append(str(nov.at[cid, "novelty"]))
        failed += [f for f in rule if f == "mis-keyed"]
        if not bool(con.at[cid, "construct_ok"]):
            failed.append("off-construct")
        failed += [f for f in rule if f not in ("not enough responses", "mis-keyed")]
        failed_all.append("; ".join(failed))
        reasons.append(failed[0] if failed else "in aim")
        extra = []
        if not bool(nov.at[cid, "novelty_ok"]):
            extra.append(f"{nov.at[cid, 'novelty']} (closest bank item {nov.at[cid, 'closest_item']})")
        if not bool(con.at[cid, "construct_ok"]):
            extra.append(str(con.at[cid, "construct"]))
        detail = out.at[cid, "detail"]
        details.append("; ".join(extra + ([str(detail)] if isinstance(detail, str) and detail else [])))
    out["bin_check"] = bins
    out["key_check"] = keys
    out["failed"] = failed_all
    out["reason"] = reasons
    out["detail"] = details
    out["decision"] = ["accepted" if not f else "rejected" for f in failed_all]
    for col in novelty.columns:
        out[col] = nov[col]
    for col in ("construct", "construct_ok", "item_fit_ppp", "p_other_stronger", "strongest_dimension"):
        out[col] = con[col] if col in con.columns else None
    out.attrs.update(decisions.attrs)
    out.attrs["novelty"] = dict(novelty.attrs)
    return out
