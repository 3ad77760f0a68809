"""The re-weighted leaderboard: each subject's accuracy with items weighted so that the benchmark's
difficulty distribution matches the target; ranks, rank intervals, who is ahead of whom; saturation.

Re-weighted accuracy (per draw s)
---------------------------------
Bin the items by their difficulty in draw s. For subject j let A_jk(s) be the items of bin k that j
answered, and y_ji its response (1/0 or a score in [0, 1]). Then

    acc_jk(s) = sum_{i in A_jk(s)} g_i(s) y_ji / sum_{i in A_jk(s)} g_i(s)          (accuracy in bin k)
    racc_j(s) = sum_{k: A_jk(s) non-empty} w_k acc_jk(s) / sum_{k: A_jk(s) non-empty} w_k

i.e. item i of bin k gets weight w_k g_i / sum_{bin k} g (the target weight of its bin divided among the
bin's items), items outside [L, U] get weight 0, and a bin with no item carries target mass that cannot
be represented: that mass is left out and the rest renormalised. The benchmark-level *unrepresented target
mass* is U(s) = sum_k w_k [bin k holds no item in draw s].

With ``g_i = 1`` and complete responses this is w_k / share_k per item, as in the definition "weight of
item i = target weight of its bin / share of the benchmark's items in that bin" (up to a constant), and
with the target equal to the benchmark's own binned distribution it returns the raw accuracy exactly.

*Missing responses*: each subject is re-weighted over the items it answered: its accuracy within each bin
is taken over its own answered items there, and bins where it answered nothing are left out and the
target weights renormalised over the rest.

*Item sampling* (``g``): by default the audit also draws g_i(s) ~ Exponential(1) independently per item
and draw, the Bayesian bootstrap (Rubin 1981) over the benchmark's items, shared by all subjects so that
comparisons stay paired. The interval of racc_j then reflects both where the items lie (the difficulty
posterior) and that the items are a finite sample; without it two subjects whose raw accuracies differ by
one item would look certainly ordered. Pass ``resample_items=False`` to :func:`irtbayes.auditing.run.audit` to
keep only the difficulty uncertainty.

Ranks, P(ahead) and groups
--------------------------
In each draw subjects are ranked by racc (1 = best); ties (the same responses on the weighted items) are
broken by the subject's ability in that draw, and a subject with no answered item in range ranks last.
P(A ahead of B) = mean_s [rank_A(s) < rank_B(s)]. *Groups*: subjects sorted by posterior mean rank;
the first opens group 1 and is its leader; each next subject joins the current group unless
P(leader ahead of it) >= ``threshold`` (default 0.9), in which case it opens the next group and leads
it. Within a group no subject is credibly behind the group's leader, so the group's members cannot be
told apart at that level. The groups need only the leaders' rows of P(ahead), computed one block of
candidates at a time (:func:`ranked_groups`), so they cost memory O(draws x subjects) however many subjects.

The full P(ahead) matrix grows with the square of the number of subjects; the audit keeps it for the first
:data:`MAX_AHEAD_SUBJECTS` subjects by posterior mean rank (all of them when there are fewer), and every
subject's rank, interval and group in the ranking table.

Saturation
----------
Take the top-k subjects by posterior mean ability (default k = 5) among those who answered items of the
benchmark. An item is *saturated* when every top-k subject who answered it solved it (response 1), and it
*separates* the top-k when at least two of them answered it with different responses. Reported: the share
of saturated items and the share of items that do not separate the top-k, among items at least one top-k
subject answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "DEFAULT_GROUP_THRESHOLD",
    "DEFAULT_TOP_K",
    "MAX_AHEAD_SUBJECTS",
    "StackedResponses",
    "ahead_probability",
    "draw_ranks",
    "indistinguishable_groups",
    "ranked_groups",
    "reweighted_accuracy",
    "saturation",
    "unrepresented_mass",
]

#: P(leader ahead) at or above which a subject starts a new group.
DEFAULT_GROUP_THRESHOLD = 0.9
#: Number of top subjects for saturation.
DEFAULT_TOP_K = 5
#: Subjects (the first by posterior mean rank) for which the audit keeps the full P(ahead) matrix.
MAX_AHEAD_SUBJECTS = 200
#: Booleans compared at once when counting P(ahead) (bounds the working memory to about 16 MiB).
_BLOCK_ELEMENTS = 2**24


def reweighted_accuracy(
    codes: np.ndarray,
    responses: np.ndarray | StackedResponses,
    weights: np.ndarray,
    *,
    item_weights: np.ndarray | None = None,
    block: int | None = None,
) -> np.ndarray:
    """Per-draw re-weighted accuracy of every subject (formula in the module docstring).

    Parameters
    ----------
    codes
        (draw, item) bin codes from :func:`irtbayes.auditing.coverage.bin_codes`: 0 below L, k + 1 in bin k,
        K + 1 above U.
    responses
        (subject, item) responses in [0, 1], NaN where missing, or their :class:`StackedResponses`.
    weights
        (K,) target weights, or (draw, K).
    item_weights
        (draw, item) positive weights g (the Bayesian bootstrap); None means 1.
    block
        Draws computed at once; by default as many as keep the per-bin sums near 8 Mi numbers (64 MiB, and
        about four times that in all while a block is computed) whatever the number of subjects.

    Returns
    -------
    numpy.ndarray
        (draw, subject); NaN where a subject answered no item inside [L, U] in that draw.

    Examples
    --------
    Two items below 0 and one above: with a uniform target over the two bins, the item above counts as much as
    the two below together.

    >>> from irtbayes.auditing.coverage import bin_codes
    >>> from irtbayes.auditing.ranking import reweighted_accuracy
    >>> codes = bin_codes(np.array([[-1.0, -0.5, 1.0]]), np.array([-2.0, 0.0, 2.0]))  # one draw
    >>> responses = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # (subject, item)
    >>> reweighted_accuracy(codes, responses, np.array([0.5, 0.5]))  # raw accuracies are 2/3 and 1/3
    array([[0.5, 0.5]])
    """
    codes = np.atleast_2d(np.asarray(codes)).astype(np.int64)
    n_draws = codes.shape[0]
    w = np.asarray(weights, dtype="float64")
    n_bins = w.shape[-1]
    if w.ndim == 1:
        w = np.broadcast_to(w, (n_draws, n_bins))
    stacked = responses if isinstance(responses, StackedResponses) else StackedResponses.of(responses)
    n_subjects = stacked.n_subjects
    g = None if item_weights is None else np.asarray(item_weights, dtype="float64")
    if block is None:
        block = max(1, _BLOCK_ELEMENTS // 2 // ((n_bins + 2) * 2 * max(n_subjects, 1)))
    out = np.empty((n_draws, n_subjects))
    for start in range(0, n_draws, block):
        sl = slice(start, min(start + block, n_draws))
        out[sl] = _reweighted_block(codes[sl], stacked.values, w[sl], None if g is None else g[sl])
    return out


@dataclass(frozen=True)
class StackedResponses:
    """A (subject, item) response matrix as :func:`reweighted_accuracy` sums it: (item, 2J), the responses (0 where
    missing) beside the answered indicator. Made once per scope, it serves every block of draws."""

    values: np.ndarray

    @classmethod
    def of(cls, responses: np.ndarray) -> StackedResponses:
        y = np.asarray(responses, dtype="float64")
        answered = ~np.isnan(y)
        return cls(np.concatenate([np.where(answered, y, 0.0), answered.astype("float64")], axis=0).T)

    @property
    def n_subjects(self) -> int:
        return self.values.shape[1] // 2


def _reweighted_block(codes: np.ndarray, stacked: np.ndarray, w: np.ndarray, g: np.ndarray | None) -> np.ndarray:
    """:func:`reweighted_accuracy` for one block of draws; ``stacked`` is (item, 2J): responses, then answered."""
    n_draws, n_items = codes.shape
    n_bins = w.shape[-1]
    n_subjects = stacked.shape[1] // 2
    width = n_bins + 2
    # One sparse (draw x code, item) indicator; column i holds one entry per draw, already in row order.
    rows = (np.arange(n_draws, dtype=np.int64)[:, None] * width + codes).T.ravel()
    data = np.ones(rows.size) if g is None else g.T.ravel()
    indptr = np.arange(0, n_draws * n_items + 1, n_draws, dtype=np.int64)
    indicator = sp.csc_matrix((data, rows, indptr), shape=(n_draws * width, n_items))
    sums = np.asarray(indicator @ stacked).reshape(n_draws, width, 2 * n_subjects)[:, 1:-1, :]
    num, den = sums[..., :n_subjects], sums[..., n_subjects:]
    present = den > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(present, num / den, 0.0)
        wk = w[:, :, None] * present
        total = wk.sum(axis=1)
        return np.where(total > 0, (wk * acc).sum(axis=1) / total, np.nan)


def unrepresented_mass(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-draw target mass on bins that hold no item: sum_k w_k [count_k = 0].

    Parameters
    ----------
    counts
        (draw, K) items per bin.
    weights
        (K,) or (draw, K) target weights.

    Returns
    -------
    numpy.ndarray
        (draw,).

    Examples
    --------
    >>> from irtbayes.auditing.ranking import unrepresented_mass
    >>> unrepresented_mass(np.array([[3, 0, 1], [2, 2, 2]]), np.array([0.25, 0.5, 0.25]))
    array([0.5, 0. ])
    """
    counts = np.atleast_2d(counts)
    return (np.broadcast_to(np.asarray(weights, dtype="float64"), counts.shape) * (counts == 0)).sum(axis=1)


def draw_ranks(scores: np.ndarray, *, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Rank subjects within each draw, 1 = highest score.

    Parameters
    ----------
    scores
        (draw, subject); NaN ranks last.
    tiebreak
        (draw, subject) second key (higher ranks first) for equal scores, e.g. the ability draws; without
        it ties go to the subject listed first.

    Returns
    -------
    numpy.ndarray
        (draw, subject) int64; every row is a permutation of 1..J.

    Examples
    --------
    >>> from irtbayes.auditing.ranking import draw_ranks
    >>> draw_ranks(np.array([[0.9, 0.5, 0.7], [0.6, 0.8, np.nan]]))  # NaN ranks last
    array([[1, 3, 2],
           [2, 1, 3]])
    """
    scores = np.atleast_2d(np.asarray(scores, dtype="float64"))
    primary = np.where(np.isnan(scores), np.inf, -scores)
    secondary = np.zeros_like(primary) if tiebreak is None else -np.asarray(tiebreak, dtype="float64")
    order = np.lexsort((secondary, primary), axis=-1)
    ranks = np.empty(order.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1, order.shape[1] + 1), order.shape), axis=1)
    return ranks


def ahead_probability(ranks: np.ndarray, *, chunk: int | None = None) -> np.ndarray:
    """P(A ahead of B) = share of draws where rank_A < rank_B.

    Parameters
    ----------
    ranks
        (draw, subject) ranks.
    chunk
        Draws compared at once; by default as many as keep the working memory near 16 MiB.

    Returns
    -------
    numpy.ndarray
        (subject A, subject B); NaN on the diagonal.

    Examples
    --------
    >>> from irtbayes.auditing.ranking import ahead_probability
    >>> ranks = np.array([[1, 2, 3], [2, 1, 3], [1, 2, 3], [1, 3, 2]])  # (draw, subject)
    >>> ahead_probability(ranks)  # row ahead of column
    array([[ nan, 0.75, 1.  ],
           [0.25,  nan, 0.75],
           [0.  , 0.25,  nan]])
    """
    ranks = np.atleast_2d(ranks)
    n_draws, n_subjects = ranks.shape
    if chunk is None:
        chunk = max(1, _BLOCK_ELEMENTS // max(n_subjects * n_subjects, 1))
    total = np.zeros((n_subjects, n_subjects))
    for start in range(0, n_draws, chunk):
        r = ranks[start : start + chunk]
        total += (r[:, :, None] < r[:, None, :]).sum(axis=0)
    out = total / n_draws
    np.fill_diagonal(out, np.nan)
    return out


def _leader_rule(order: np.ndarray, p_ahead: Callable[[int, np.ndarray], np.ndarray], threshold: float) -> np.ndarray:
    """The leader rule over subjects in ``order``; ``p_ahead(leader, candidates)`` gives P(leader ahead)."""
    groups = np.zeros(len(order), dtype=np.int64)
    if len(order) == 0:
        return groups
    group, start = 1, 0
    while start < len(order):
        leader = int(order[start])
        groups[leader] = group
        position = start + 1
        while position < len(order):
            candidates = order[position : position + _LEADER_BLOCK]
            beaten = np.flatnonzero(p_ahead(leader, candidates) >= threshold)
            stop = len(candidates) if len(beaten) == 0 else int(beaten[0])
            groups[candidates[:stop]] = group
            position += stop
            if len(beaten):
                break
        group += 1
        start = position
    return groups


#: Candidates compared with a group's leader at once.
_LEADER_BLOCK = 64


def indistinguishable_groups(
    ahead: np.ndarray, mean_rank: np.ndarray, *, threshold: float = DEFAULT_GROUP_THRESHOLD
) -> np.ndarray:
    """Groups of subjects that cannot be told apart (leader rule in the module docstring).

    Parameters
    ----------
    ahead
        (subject, subject) P(A ahead of B).
    mean_rank
        (subject,) posterior mean rank.

    Returns
    -------
    numpy.ndarray
        (subject,) group numbers 1, 2, ... (1 = the top group).

    Examples
    --------
    Subject 0 is ahead of subject 1 in 60% of draws (not credibly), and of subject 2 in 95%:

    >>> from irtbayes.auditing.ranking import indistinguishable_groups
    >>> ahead = np.array([[np.nan, 0.6, 0.95], [0.4, np.nan, 0.92], [0.05, 0.08, np.nan]])
    >>> indistinguishable_groups(ahead, np.array([1.4, 1.6, 3.0]))
    array([1, 1, 2])
    """
    order = np.argsort(np.asarray(mean_rank, dtype="float64"), kind="stable")
    return _leader_rule(order, lambda leader, candidates: ahead[leader, candidates], float(threshold))


def ranked_groups(ranks: np.ndarray, *, threshold: float = DEFAULT_GROUP_THRESHOLD) -> np.ndarray:
    """The groups of :func:`indistinguishable_groups` from the ranks themselves, without the full P(ahead).

    Only each leader's P(ahead) over the subjects that follow it is computed, a block at a time: memory
    O(draws x subjects), time O(draws x (subjects + groups x block)).

    Parameters
    ----------
    ranks
        (draw, subject) ranks.

    Returns
    -------
    numpy.ndarray
        (subject,) group numbers 1, 2, ... (1 = the top group), equal to
        ``indistinguishable_groups(ahead_probability(ranks), ranks.mean(axis=0))``.
    """
    ranks = np.atleast_2d(ranks)
    order = np.argsort(ranks.mean(axis=0), kind="stable")

    def p_ahead(leader: int, candidates: np.ndarray) -> np.ndarray:
        return (ranks[:, [leader]] < ranks[:, candidates]).mean(axis=0)

    return _leader_rule(order, p_ahead, float(threshold))


def saturation(responses: np.ndarray, top: np.ndarray) -> dict[str, np.ndarray]:
    """Which items the top subjects all solve, and which still separate them.

    Parameters
    ----------
    responses
        (subject, item) in [0, 1], NaN where missing.
    top
        Indices of the top-k subjects.

    Returns
    -------
    dict
        ``answered`` (item,) at least one top subject answered; ``saturated`` (item,) every top subject who
        answered solved it (response 1); ``separates`` (item,) two top subjects gave different responses.

    Examples
    --------
    >>> from irtbayes.auditing.ranking import saturation
    >>> responses = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, np.nan], [0.0, 0.0, 0.0]])
    >>> saturation(responses, np.array([0, 1]))  # the top two subjects
    {'answered': array([ True,  True,  True]), 'saturated': array([ True, False, False]), 'separates': array([False,  True, False])}
    """
    y = np.asarray(responses, dtype="float64")[np.asarray(top, dtype=np.int64)]
    seen = ~np.isnan(y)
    answered = seen.any(axis=0)
    saturated = answered & np.all(np.where(seen, y == 1, True), axis=0)
    high = np.where(seen, y, -np.inf).max(axis=0)
    low = np.where(seen, y, np.inf).min(axis=0)
    separates = answered & (high > low)
    return {"answered": answered, "saturated": saturated, "separates": separates}
