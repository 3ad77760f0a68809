"""Settings for the docstring examples, which pytest runs as doctests (``--doctest-modules irtbayes``).

Figures are drawn off-screen and closed after each example; ``np`` and ``pd`` are available in every example.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest


@pytest.fixture(autouse=True)
def _doctest_setup(doctest_namespace: dict[str, Any]) -> Iterator[None]:
    doctest_namespace["np"] = np
    doctest_namespace["pd"] = pd
    yield
    plt.close("all")
