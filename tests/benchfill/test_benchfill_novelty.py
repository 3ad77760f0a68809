"""BenchFill's novelty screen: the documented thresholds on a labelled set, and the decisions they lead to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.benchfill.screens import NO_BANK_TEXT, classify_pair, content_similarity, screen_novelty, word_similarity
from irtbayes.core.errors import SpecError

PAIRS = Path(__file__).parents[1] / "fixtures" / "benchfill_novelty_pairs.csv"


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    frame = pd.read_csv(PAIRS)
    frame["predicted"] = [classify_pair(a, b) for a, b in zip(frame["bank_text"], frame["candidate_text"], strict=True)]
    return frame


def _precision_recall(frame: pd.DataFrame, label: str) -> tuple[float, float]:
    hit = ((frame["predicted"] == label) & (frame["label"] == label)).sum()
    return hit / max((frame["predicted"] == label).sum(), 1), hit / (frame["label"] == label).sum()


def test_the_labelled_set_is_balanced_and_realistic(pairs):
    assert pairs["label"].value_counts().to_dict() == {"near-duplicate": 24, "rewrite": 24, "unrelated": 24}
    assert pairs["pair_id"].is_unique
    assert (pairs["bank_text"] != pairs["candidate_text"]).all()


def test_near_duplicates_are_found_at_the_documented_thresholds(pairs):
    precision, recall = _precision_recall(pairs, "near-duplicate")
    assert (precision, recall) == (1.0, 1.0), pairs.loc[
        (pairs["predicted"] == "near-duplicate") != (pairs["label"] == "near-duplicate"),
        ["pair_id", "label", "predicted"],
    ]


def test_rewrites_are_flagged_with_high_precision(pairs):
    """Surface similarity finds half the paraphrases, and never calls an unrelated item a rewrite."""
    precision, recall = _precision_recall(pairs, "rewrite")
    assert precision == 1.0 and recall >= 0.5, (precision, recall)
    unrelated = pairs.loc[pairs["label"] == "unrelated", "predicted"]
    assert (unrelated == "unrelated").all(), unrelated.value_counts()


def test_similarities_are_exact_on_small_cases():
    assert word_similarity("Solve for x: 3x + 7 = 22.", "Solve for x: 3x + 7 = 25.") == pytest.approx(1 - 1 / 6)
    assert word_similarity("same words here", "same words here") == 1.0
    assert content_similarity("Which organ produces insulin?", "Insulin is produced by which organ?") > 0.9
    assert classify_pair("What is the capital of Peru?", "What is the capital of Chile?") == "near-duplicate"
    assert classify_pair("Who wrote Hamlet?", "How many legs does a spider have?") == "unrelated"


BANK = pd.Series(
    {
        "q1": "Tom has 5 apples and gives 2 to Mary. How many apples does Tom have left?",
        "q2": "Which organ in the human body produces insulin?",
        "q3": "What is the chemical symbol for gold?",
        "q4": None,
    }
)


def test_screen_rejects_copies_allows_asked_rewrites_and_records_the_closest_item():
    candidates = pd.DataFrame(
        {
            "text": [
                "Tom has 9 apples and gives 2 to Mary. How many apples does Tom have left?",  # copy of q1
                "Insulin is secreted by which organ of the human body?",  # rewrite of q2, asked for
                "Insulin is secreted by which organ of the human body, the pancreas or another?",  # rewrite, not asked
                "A die is rolled twice. What is the probability that the sum is 7?",  # novel
                "A die is rolled twice. What is the probability that the sum is 8?",  # copy of the one before
                "What is the chemical symbol for silver?",  # copy of q3 although q3 is its seed
            ],
            "seed_item": ["q1", "q2", None, None, None, "q3"],
        },
        index=pd.Index(["c1", "c2", "c3", "c4", "c5", "c6"], name="candidate_id"),
    )
    out = screen_novelty(candidates, BANK)
    assert out["novelty"].to_dict() == {
        "c1": "near-duplicate of q1",
        "c2": "rewrite of seed q2",
        "c3": "rewrite of q2",
        "c4": "novel",
        "c5": "near-duplicate of candidate c4",
        "c6": "near-duplicate of q3",
    }
    assert out["novelty_ok"].tolist() == [False, True, False, True, False, False]
    assert out.loc["c1", "closest_item"] == "q1" and out.loc["c1", "closest_text"] == BANK["q1"]
    assert out.loc["c1", "closest_word_similarity"] == pytest.approx(1 - 1 / 16)
    assert out.loc["c5", "closest_candidate"] == "c4"
    assert out["closest_item"].notna().all() and np.isfinite(out["closest_content_similarity"]).all()
    assert out.attrs["bank_texts"] == 3


def test_without_bank_texts_the_screen_says_so_and_still_compares_candidates():
    candidates = pd.DataFrame(
        {"text": ["What is 2 + 2?", "What is 2 + 3?", "Name a prime number above 50."]},
        index=pd.Index(["a", "b", "c"], name="candidate_id"),
    )
    out = screen_novelty(candidates, pd.Series({"q1": None, "q2": "  "}))
    assert out.loc["a", "novelty"] == NO_BANK_TEXT and out.loc["c", "novelty"] == NO_BANK_TEXT
    assert out.loc["b", "novelty"] == "near-duplicate of candidate a" and not out.loc["b", "novelty_ok"]
    assert out["closest_item"].isna().all()
    assert out.attrs["bank_texts"] == 0


def test_screen_needs_texts():
    with pytest.raises(SpecError, match="'text' column"):
        screen_novelty(pd.DataFrame({"x": [1]}), BANK)


def test_a_short_question_inside_a_long_passage_is_no_rewrite_and_rewrites_can_be_allowed():
    passage = (
        "The pancreas is an organ of the digestive system. Among other hormones it releases insulin, which the "
        "human body needs to take glucose from the blood into its cells; the liver stores what is left as glycogen."
    )
    question = "Which organ releases insulin?"
    assert content_similarity(question, passage) == 1.0  # every content word of the question is in the passage
    assert classify_pair(question, passage) == "unrelated"
    candidates = pd.DataFrame(
        {"text": ["Insulin is secreted by which organ of the human body, the pancreas or another?"]},
        index=pd.Index(["c3"], name="candidate_id"),
    )
    assert screen_novelty(candidates, BANK).loc["c3", ["novelty", "novelty_ok"]].tolist() == ["rewrite of q2", False]
    allowed = screen_novelty(candidates, BANK, allow_rewrites=True)
    assert allowed.loc["c3", ["novelty", "novelty_ok"]].tolist() == ["rewrite of q2", True]
    assert allowed.attrs["allow_rewrites"] is True
