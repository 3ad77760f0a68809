"""Simulated responses under two conditions with planted condition-sensitive items and systems."""

from __future__ import annotations

import numpy as np
import pandas as pd

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData

__all__ = ["simulate_condition_responses"]


def simulate_condition_responses(
    n_subjects: int,
    n_items: int,
    *,
    n_sensitive_items: int,
    n_sensitive_subjects: int,
    item_effect: float = 1.5,
    subject_shift: float = 1.5,
    conditions: tuple[str, str] = ("original", "reformatted"),
    seed: int = 0,
) -> tuple[ResponseData, np.ndarray, np.ndarray]:
    """1PL responses of every subject to every item under two conditions, some items and subjects planted.

    Under the second condition the first ``n_sensitive_items`` items are ``item_effect`` logits harder
    (alternating sign: odd-numbered ones are easier) and the first ``n_sensitive_subjects`` subjects are
    ``subject_shift`` logits weaker (alternating sign likewise); everything else is unchanged.

    Returns
    -------
    (data, sensitive_items, sensitive_subjects)
        The responses (``condition`` column) and the planted item and subject ids.

    Examples
    --------
    >>> from irtbayes.robustness.simulation import simulate_condition_responses
    >>> data, items, subjects = simulate_condition_responses(20, 30, n_sensitive_items=3, n_sensitive_subjects=2, seed=1)
    >>> list(data.conditions), data.n_responses, len(items), len(subjects)
    (['original', 'reformatted'], 1200, 3, 2)
    """
    if not 0 <= n_sensitive_items <= n_items or not 0 <= n_sensitive_subjects <= n_subjects:
        raise SpecError("simulate_condition_responses: more sensitive items or subjects than there are")
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_subjects)
    ability = (ability - ability.mean()) / ability.std()
    difficulty = rng.normal(0.0, 1.0, n_items)
    signs_i = np.where(np.arange(n_sensitive_items) % 2 == 0, 1.0, -1.0)
    signs_s = np.where(np.arange(n_sensitive_subjects) % 2 == 0, 1.0, -1.0)
    gamma = np.zeros(n_items)
    gamma[:n_sensitive_items] = item_effect * signs_i
    delta = np.zeros(n_subjects)
    delta[:n_sensitive_subjects] = -subject_shift * signs_s
    subjects = np.array([f"sys{j:03d}" for j in range(n_subjects)])
    items = np.array([f"q{i:03d}" for i in range(n_items)])
    frames = []
    for k, condition in enumerate(conditions):
        eta = ability[:, None] + k * delta[:, None] - difficulty[None, :] - k * gamma[None, :]
        y = (rng.uniform(size=eta.shape) < irt.sigmoid_mix(eta)).astype(float)
        frames.append(
            pd.DataFrame(
                {
                    "subject": np.repeat(subjects, n_items),
                    "item": np.tile(items, n_subjects),
                    "response": y.ravel(),
                    "condition": condition,
                }
            )
        )
    data = ResponseData.from_long(
        pd.concat(frames, ignore_index=True),
        condition="condition",
        source=f"simulated conditions ({n_subjects} subjects x {n_items} items x 2)",
    )
    return data, items[:n_sensitive_items], subjects[:n_sensitive_subjects]
