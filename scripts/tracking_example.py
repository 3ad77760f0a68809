"""A worked example of ``irtbayes track`` on real data: the Llama 7-8B line on MMLU-Pro (docs/tracking.md).

The embedded MMLU-Pro responses hold four releases of Meta's 7-8B models: Llama-2-7b, Llama-3-8B, Llama-3.1-8B and
Llama-3.1-8B-Instruct. They stand in for checkpoints: the bank is fitted to the other 25 systems (the default
fit), and each release is compared with the one before, in the audit's bins and in the 14 subject categories.

    .venv/bin/python scripts/tracking_example.py --out notebooks/results/tracking_llama8b
"""

from __future__ import annotations

import argparse
from pathlib import Path

LINE = ["Llama-2-7b-hf", "Meta-Llama-3-8B", "Meta-Llama-3_1-8B", "Meta-Llama-3_1-8B-Instruct"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fit", type=Path, default=None, help="a saved fit of the bank to reuse (else fitted)")
    args = parser.parse_args()

    import irtbayes as irt

    data = irt.load_dataset("mmlu_pro")
    others = [s for s in data.subject_ids if s not in LINE]
    bank_data = data.subset(subjects=others)
    if args.fit is not None and args.fit.exists():
        bank = irt.load_fit(args.fit)
    else:
        bank = irt.fit(bank_data, seed=1)
        if args.fit is not None:
            irt.save_fit(bank, args.fit)
    print(repr(bank))
    line = data.subset(subjects=LINE)
    result = irt.track(bank, line, step={name: k for k, name in enumerate(LINE)}, data=bank_data, seed=1)
    result.save(args.out)
    print(result.to_text())


if __name__ == "__main__":
    main()
