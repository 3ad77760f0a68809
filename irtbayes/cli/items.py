"""The ``check-items`` verb: reversed, flat and DIF flags of a saved fit's items (:mod:`irtbayes.checks.items`).

::

    irtbayes check-items --fit FIT --out DIR [--data DATA] [--group-col COL | --groups FILE] [--alpha 0.05]
        [--rule each|mean] [--draws 60] [--flat-slope 0.3] [--min-effect 0.5] [--ci 0.9] [--seed 0]

The fit's data are read again as its card records them (or from ``--data``, checked by checksum). Writes
``item_flags.csv``, ``item_flags.txt`` and ``item_flags.png`` to DIR, each atomically, and prints the text.
"""

from __future__ import annotations

import argparse

__all__ = ["cmd_check_items"]


def cmd_check_items(args: argparse.Namespace) -> int:
    """``check-items``: flag the fit's reversed, flat and DIF items; writes item_flags.csv, .txt and .png.

    Examples
    --------
    >>> from irtbayes.cli.parser import add_check_items_verb
    >>> verbs = argparse.ArgumentParser().add_subparsers()
    >>> add_check_items_verb(verbs, cmd_check_items)
    >>> args = verbs.choices["check-items"].parse_args(["--fit", "f", "--out", "o", "--group-col", "family"])
    >>> args.func is cmd_check_items, args.group_col, args.alpha, args.draws
    (True, 'family', 0.05, 60)
    """
    from irtbayes.checks.items import check_items
    from irtbayes.fitting.storage import load_fit, load_fit_data

    fit = load_fit(args.fit)
    data = load_fit_data(fit, args.data, hint="give the fit's own data with --data")
    result = check_items(
        fit,
        data,
        group_col=args.group_col,
        groups=args.groups,
        alpha=args.alpha,
        rule=args.rule,
        n_draws=args.draws,
        flat_slope=args.flat_slope,
        min_effect=args.min_effect,
        ci_prob=args.ci,
        seed=args.seed,
    )
    written = result.save(args.out)
    print(result.to_text())
    print(f"\nWrote {', '.join(written)} to {args.out}")
    return 0
