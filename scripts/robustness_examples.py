"""Build the inputs of the `irtbayes robustness` examples (docs/studies.md#robustness-measured-on-real-data).

They are built from the external data sets.

Writes into OUT (default ``out/robustness_inputs``):

- ``xstest_conditions.csv``: Llama-2 and Mistral each with and without a system prompt (``llama2orig`` /
  ``llama2new``, ``mistralguard`` / ``mistralinstruct``) as two systems under two conditions; 1 = full
  compliance;
- ``jbb_judges.csv``: JailbreakBench's 18 attack/model pairs judged by each artifact's own judge and by Llama
  Guard (where it judged), as two conditions;
- ``nlu_mutual.csv`` and ``nlu_families.csv``: MuTual and MuTual+ (150 items of each, drawn at seed 0) for the
  90 NLU checkpoints, and each checkpoint's architecture family;
- ``openllm_a.csv`` and ``openllm_b.csv``: two disjoint random draws (seed 0) of 300 Open LLM Leaderboard
  models on the tinyBenchmarks ARC-Challenge items.

Then run, for example::

    irtbayes robustness OUT/xstest_conditions.csv --reference-condition no_system_prompt --seed 1 --out rob_xstest
    irtbayes robustness OUT/jbb_judges.csv --reference-condition artifact_judge --draws 2500 --seed 1 --out rob_jbb
    irtbayes robustness OUT/nlu_mutual.csv --families OUT/nlu_families.csv --bootstrap 2 \\
        --revision mutual:mutual-plus --seed 1 --out rob_nlu
    irtbayes robustness OUT/openllm_a.csv --population OUT/openllm_b.csv --bootstrap 2 --seed 1 --out rob_openllm

(``docs/studies.md#robustness-measured-on-real-data`` gives what each run measured, its time and its convergence).

Usage: ``python scripts/robustness_examples.py [--data ../shared/data] [--out out/robustness_inputs]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

XSTEST = {
    "llama2orig": ("llama2", "system_prompt"),
    "llama2new": ("llama2", "no_system_prompt"),
    "mistralguard": ("mistral", "system_prompt"),
    "mistralinstruct": ("mistral", "no_system_prompt"),
}
FAMILIES = ("roberta-base", "roberta-med-small", "roberta-large", "xlm-roberta", "albert", "bert")


def xstest(root: Path) -> pd.DataFrame:
    labels = pd.read_csv(root / "xstest_completions" / "xstest_labels_long.csv")
    meta = pd.read_csv(root / "xstest_completions" / "xstest_prompt_meta.csv")
    meta["id"] = "v2-" + meta["id"].astype(str)
    d = labels.loc[labels["model"].isin(XSTEST)].merge(meta[["id", "label"]], on="id", how="left")
    return pd.DataFrame(
        {
            "subject": d["model"].map(lambda m: XSTEST[m][0]),
            "item": d["id"],
            "response": (d["final_label"] == "1_full_compliance").astype(int),
            "condition": d["model"].map(lambda m: XSTEST[m][1]),
            "benchmark": "xstest_" + d["label"],
        }
    )


def jailbreakbench(root: Path) -> pd.DataFrame:
    d = pd.read_csv(root / "jailbreakbench_artifacts" / "jailbreakbench_long.csv")
    d["subject"] = d["method"] + "|" + d["model"]
    d["item"] = "jbb" + d["behavior_index"].astype(str)
    own = d[["subject", "item", "jailbroken"]].rename(columns={"jailbroken": "response"})
    guard = d.loc[d["jailbroken_llama_guard1"].notna(), ["subject", "item", "jailbroken_llama_guard1"]]
    guard = guard.rename(columns={"jailbroken_llama_guard1": "response"})
    out = pd.concat([own.assign(condition="artifact_judge"), guard.assign(condition="llama_guard1")])
    return out.assign(response=out["response"].astype(float).astype(int))


def family(subject: str) -> str:
    base = subject.rsplit("_", 1)[0]
    return next(f for f in FAMILIES if base.startswith(f))


def nlu(root: Path, *, n_items: int = 150) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    frames = []
    for name in ("mutual", "mutual-plus"):
        wide = pd.read_csv(root / "nlu_test_sets_vania2021" / f"{name}_irt_all_coded.csv")
        cols = [c for c in wide.columns if c != "userid"]
        keep = sorted(rng.choice(len(cols), n_items, replace=False))
        wide = wide[["userid"] + [cols[k] for k in keep]]
        long = wide.melt(id_vars="userid", var_name="item", value_name="response")
        frames.append(long.rename(columns={"userid": "subject"}).assign(benchmark=name))
    out = pd.concat(frames, ignore_index=True)
    subjects = pd.Series(out["subject"].unique())
    return out, pd.DataFrame({"subject": subjects, "family": subjects.map(family)})


def openllm(root: Path, *, n: int = 300) -> tuple[pd.DataFrame, pd.DataFrame]:
    wide = pd.read_csv(root / "openllm_tinybench_atlas" / "response_matrix_tinyarc.csv", index_col=0)
    order = np.random.default_rng(0).permutation(len(wide))
    parts = []
    for rows in (order[:n], order[n : 2 * n]):
        long = wide.iloc[rows].reset_index(names="subject").melt(id_vars="subject", var_name="item")
        long = long.rename(columns={"value": "response"})
        parts.append(long.assign(item="arc" + long["item"].astype(str), benchmark="arc_challenge"))
    return parts[0], parts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/data", help="the external data folder")
    parser.add_argument("--out", default="out/robustness_inputs")
    args = parser.parse_args()
    root, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    xstest(root).to_csv(out / "xstest_conditions.csv", index=False)
    jailbreakbench(root).to_csv(out / "jbb_judges.csv", index=False)
    responses, families = nlu(root)
    responses.to_csv(out / "nlu_mutual.csv", index=False)
    families.to_csv(out / "nlu_families.csv", index=False)
    first, second = openllm(root)
    first.to_csv(out / "openllm_a.csv", index=False)
    second.to_csv(out / "openllm_b.csv", index=False)
    print(f"wrote the inputs to {out}")


if __name__ == "__main__":
    main()
