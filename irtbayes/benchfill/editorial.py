"""BenchFill's editorial verdict: the acceptance rule, the novelty screen and the construct screen together.

A candidate is accepted only when all three pass:

- **bin** and **key** (:func:`~irtbayes.benchfill.acceptance.decide_all`): enough responses, in the target
  interval under both priors, and a sign-free slope credibly above the least one; the key check is the
  rule's own slope screen (``"mis-keyed"``, ``"flat"``, ``"slope missing"``), not a second one;
- **novelty** (:func:`~irtbayes.benchfill.novelty.screen_novelty`): not a near-duplicate of a bank item or of
  an earlier candidate, and not a rewrite of a bank item it was not asked to rewrite;
- **construct** (:func:`~irtbayes.benchfill.construct.screen_construct`): its responses fit the model (one
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

import pandas as pd

__all__ = ["KEY_REASONS", "LOCATION_REASONS", "combine_screens"]

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
        :func:`~irtbayes.benchfill.novelty.screen_novelty` for the same candidates.
    construct
        :func:`~irtbayes.benchfill.construct.screen_construct` for the answered candidates (others get
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

    >>> from irtbayes.benchfill.editorial import combine_screens
    >>> from irtbayes.benchfill.novelty import screen_novelty
    >>> ids = pd.Index(["c1", "c2"], name="candidate_id")
    >>> decisions = pd.DataFrame({"decision": "accepted", "reason": "in target", "detail": "", "failed": ""}, index=ids)
    >>> novelty = screen_novelty(pd.DataFrame({"text": ["What is the capital of France?", "Which river flows through Cairo?"]}, index=ids), {"q1": "What is the capital of France?"})
    >>> construct = pd.DataFrame({"construct": ["fits", "fits"], "construct_ok": [True, True]}, index=ids)
    >>> combine_screens(decisions, novelty, construct)[["decision", "reason"]]
                  decision                reason
    candidate_id
    c1            rejected  near-duplicate of q1
    c2            accepted             in target
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
        bins.append(next((f for f in rule if f in LOCATION_REASONS or f == "not enough responses"), "in target"))
        keys.append(next((f for f in rule if f in KEY_REASONS), "ok"))
        failed = [f for f in rule if f == "not enough responses"]
        if not bool(nov.at[cid, "novelty_ok"]):
            failed.append(str(nov.at[cid, "novelty"]))
        failed += [f for f in rule if f == "mis-keyed"]
        if not bool(con.at[cid, "construct_ok"]):
            failed.append("off-construct")
        failed += [f for f in rule if f not in ("not enough responses", "mis-keyed")]
        failed_all.append("; ".join(failed))
        reasons.append(failed[0] if failed else "in target")
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
