"""How responses are read into scores: :class:`ReadOptions`, the one object every loader takes.

Each loader of :mod:`irtbayes.data.io`, :meth:`ResponseData.from_long <irtbayes.data.responses.ResponseData.from_long>`
and ``from_wide`` take ``options=ReadOptions(...)``, or its fields as keywords (``scoring="ordinal"``,
``categories=[...]``), typed by :class:`ReadFields`. :meth:`ReadOptions.split` is the one place where such keywords
become the object; the object checks itself once, when it is made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from irtbayes.core.errors import DataError
from irtbayes.data.columns import SCORINGS, OrdinalScale, Scoring, declared_scale

__all__ = ["ReadFields", "ReadOptions"]


@dataclass(frozen=True)
class ReadOptions:
    """How a loader reads responses into scores, checked when made.

    Attributes
    ----------
    scoring
        ``"auto"`` (default) and ``"fraction"`` keep scores in [0, 1] (1/0, partial credit, k successes of n trials);
        ``"binary"`` refuses anything but 0/1; ``"ordinal"`` reads graded categories, held as codes 0..K-1 (see
        ``categories`` and ``bins``).
    categories
        With ``scoring="ordinal"``: the category labels in order, the lowest first (strings or numbers; ``1``,
        ``1.0`` and ``"1"`` are one label), each response coded by its label's position; with ``bins``, one label
        per bin. Neither given: the responses must be integers, and the categories are every integer from the
        smallest to the largest.
    bins
        With ``scoring="ordinal"``: increasing edges e1 < e2 < ... that cut numeric scores into categories (below e1
        is category 0, [e1, e2) category 1, ..., at or above the last edge category ``len(bins)``).
    require_benchmark
        Refuse items without a ``benchmark`` label.
    scale
        Not given but made: the declared :class:`~irtbayes.data.columns.OrdinalScale` of ``categories`` or
        ``bins``, else None (scores, or ordinal categories to infer from the data).

    Raises
    ------
    DataError
        An unknown ``scoring``; ``categories`` or ``bins`` without ``scoring="ordinal"``; fewer than two categories,
        a blank or repeated label, edges that are not increasing numbers, or a number of labels other than
        ``len(bins) + 1``; a ``require_benchmark`` that is not True or False. Each message names the option.

    Examples
    --------
    >>> options = ReadOptions(scoring="ordinal", bins=[4, 8])
    >>> options.bins, options.scale.labels
    ((4.0, 8.0), ('<4', '4-8', '>=8'))
    >>> options.recorded()  # as data.reading["options"] records it: what differs from the defaults
    {'scoring': 'ordinal', 'bins': [4.0, 8.0]}
    >>> ReadOptions(categories=["low", "high"])
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.DataError: categories given with scoring='auto'; they describe ordinal categories, ...
    """

    scoring: Scoring = "auto"
    categories: Sequence[Any] | None = None
    bins: Sequence[float] | None = None
    require_benchmark: bool = False
    scale: OrdinalScale | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scoring not in SCORINGS:
            raise DataError(f"scoring must be one of {', '.join(map(repr, SCORINGS))}, got {self.scoring!r}")
        given = [name for name in ("categories", "bins") if getattr(self, name) is not None]
        if given and self.scoring != "ordinal":
            raise DataError(
                f"{' and '.join(given)} given with scoring='{self.scoring}'; they describe ordinal categories, so "
                "pass scoring='ordinal' (--response-kind ordinal on the command line)"
            )
        if not isinstance(self.require_benchmark, bool | np.bool_):
            raise DataError(f"require_benchmark must be True or False, got {self.require_benchmark!r}")
        object.__setattr__(self, "require_benchmark", bool(self.require_benchmark))
        if not given:
            return
        scale = declared_scale(categories=self.categories, bins=self.bins)
        if self.categories is not None:  # plain values, so the options hash and are recorded as JSON
            plain = tuple(c.item() if isinstance(c, np.generic) else c for c in self.categories)
            object.__setattr__(self, "categories", plain)
        if self.bins is not None:
            object.__setattr__(self, "bins", scale.edges)
        object.__setattr__(self, "scale", scale)

    @property
    def ordinal(self) -> bool:
        """Whether the responses are read as graded categories (``scoring="ordinal"``)."""
        return self.scoring == "ordinal"

    @classmethod
    def split(
        cls, keywords: Mapping[str, Any], options: ReadOptions | None = None
    ) -> tuple[ReadOptions, dict[str, Any]]:
        """The one place where flat keywords become options: ``options`` (default: the defaults) with the
        :class:`ReadFields` among ``keywords`` in place of its own, and the other keywords, as given.

        Examples
        --------
        >>> options, rest = ReadOptions.split({"scoring": "ordinal", "metric": "acc_norm"})
        >>> options.scoring, rest
        ('ordinal', {'metric': 'acc_norm'})
        >>> ReadOptions.split({"scoring": "binary"}, ReadOptions(require_benchmark=True))[0]
        ReadOptions(scoring='binary', categories=None, bins=None, require_benchmark=True)
        """
        names = _FIELD_NAMES
        fields = {key: value for key, value in keywords.items() if key in names}
        rest = {key: value for key, value in keywords.items() if key not in names}
        base = cls() if options is None else options
        if not isinstance(base, ReadOptions):
            raise DataError(f"options must be a ReadOptions, got {type(base).__name__}")
        return (dataclasses.replace(base, **fields) if fields else base), rest

    @classmethod
    def of(cls, options: ReadOptions | None, keywords: Mapping[str, Any], *, caller: str) -> ReadOptions:
        """:meth:`split` for a function that takes ``options`` and :class:`ReadFields` as ``**keywords``: a keyword
        that is neither is a TypeError naming ``caller``, as Python's own for an unexpected keyword argument.

        >>> ReadOptions.of(None, {"scoring": "binary"}, caller="load_long").scoring
        'binary'
        >>> ReadOptions.of(None, {"scorng": "binary"}, caller="load_long")
        Traceback (most recent call last):
        ...
        TypeError: load_long() got an unexpected keyword argument 'scorng' (did you mean 'scoring'?)
        """
        read, rest = cls.split(keywords, options)
        if rest:
            import difflib

            name = next(iter(rest))
            close = difflib.get_close_matches(name, _FIELD_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}{hint}")
        return read

    def recorded(self) -> dict[str, Any]:
        """The options that differ from the defaults, as flat JSON-ready keys: what ``data.reading["options"]``
        (and a fit's ``card.json``) records, and what :func:`irtbayes.data.io.reread` passes back.

        >>> ReadOptions().recorded(), ReadOptions(scoring="ordinal", categories=[2, 1]).recorded()
        ({}, {'scoring': 'ordinal', 'categories': [2, 1]})
        """
        out: dict[str, Any] = {}
        for name in _FIELD_NAMES:
            value = getattr(self, name)
            if value != _DEFAULTS[name]:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def refuse_ordinal(self, source: str, *, recorded: str) -> None:
        """A DataError for ordinal scoring of a source that ``recorded`` (what it logs) says holds no categories.

        >>> ReadOptions(scoring="ordinal").refuse_ordinal("logs", recorded="the logs hold 0/1 accuracies")
        Traceback (most recent call last):
        ...
        irtbayes.core.errors.DataError: logs: the logs hold 0/1 accuracies, not graded categories; ordinal scoring does not apply (use scoring='binary' or 'auto')
        """
        if self.ordinal:
            raise DataError(
                f"{source}: {recorded}, not graded categories; ordinal scoring does not apply (use scoring='binary' "
                "or 'auto')"
            )


class ReadFields(TypedDict, total=False):
    """The fields of :class:`ReadOptions` as keyword arguments of the loaders (each optional; the meaning and
    default of each is in :class:`ReadOptions`)."""

    scoring: Scoring
    categories: Sequence[Any] | None
    bins: Sequence[float] | None
    require_benchmark: bool


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ReadOptions) if f.init)
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(ReadOptions) if f.init}
