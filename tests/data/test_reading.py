"""ReadOptions: the one object that says how every loader reads responses into scores.

It checks itself when made; every loader takes it as ``options=`` or its fields as keywords, and both give the same
data; ``io.load`` records its fields flat in ``data.reading["options"]``, which ``reread`` reads back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.helm import load_helm
from irtbayes.data.io.inspect import load_inspect
from irtbayes.data.io.leaderboard import load_leaderboard
from irtbayes.data.io.lighteval import load_lighteval
from irtbayes.data.io.lm_eval import load_lm_eval
from irtbayes.data.io.opencompass import load_opencompass
from irtbayes.data.io.pyirt import load_pyirt
from irtbayes.data.io.tabular import load_long, load_wide
from irtbayes.data.reading import ReadOptions
from irtbayes.data.registry import data_root, load_dataset, load_folder
from irtbayes.data.responses import ResponseData

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
XSTEST_ORDER = ["1_full_compliance", "3_partial_refusal", "2_full_refusal"]

# ------------------------------------------------------------------------------------------------- the object


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scoring": "graded"}, r"^scoring must be one of 'auto', 'binary', 'fraction', 'ordinal', got 'graded'$"),
        ({"categories": [0, 1]}, r"^categories given with scoring='auto'; .* pass scoring='ordinal'"),
        ({"scoring": "binary", "bins": [0.5]}, r"^bins given with scoring='binary'"),
        ({"scoring": "fraction", "categories": ["a", "b"], "bins": [0.5]}, "^categories and bins given with"),
        ({"scoring": "ordinal", "bins": [0.8, 0.5]}, r"^bins must be increasing numbers .*\[0\.8, 0\.5\]"),
        ({"scoring": "ordinal", "bins": ["low"]}, "^bins must be increasing numbers"),
        ({"scoring": "ordinal", "categories": "abc"}, "^categories must be a list of labels in order"),
        ({"scoring": "ordinal", "categories": ["only"]}, "^categories: an ordinal scale needs at least two"),
        ({"scoring": "ordinal", "categories": ["a", "b", "a"]}, "^categories: 'a' is listed twice"),
        (
            {"scoring": "ordinal", "categories": ["a", "b"], "bins": [1, 2]},
            "^2 bin edge.* 3 categories, but 2 category",
        ),
        ({"require_benchmark": "yes"}, "^require_benchmark must be True or False, got 'yes'$"),
    ],
)
def test_bad_options_are_refused_when_made_naming_the_option(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        ReadOptions(**fields)


def test_the_options_hold_plain_values_their_scale_and_compare_by_value() -> None:
    binned = ReadOptions(scoring="ordinal", bins=[4, 8], categories=["low", "mid", "high"])
    assert binned.bins == (4.0, 8.0) and binned.categories == ("low", "mid", "high")
    assert binned.scale is not None and binned.scale.labels == ("low", "mid", "high") and binned.scale.edges == (4, 8)
    assert binned == ReadOptions(scoring="ordinal", bins=(4.0, 8.0), categories=("low", "mid", "high"))
    assert len({binned, dataclasses.replace(binned), ReadOptions()}) == 2  # hashable
    assert ReadOptions().scale is None and ReadOptions(scoring="ordinal").scale is None  # categories to infer
    with pytest.raises(dataclasses.FrozenInstanceError):
        binned.scoring = "auto"  # type: ignore[misc]


def test_flat_keywords_become_options_in_one_place_and_override_the_object() -> None:
    options, rest = ReadOptions.split({"bins": [3], "metric": "acc"}, ReadOptions(scoring="ordinal", bins=[2, 4]))
    assert options == ReadOptions(scoring="ordinal", bins=[3]) and rest == {"metric": "acc"}
    assert ReadOptions.split({}, None) == (ReadOptions(), {})
    with pytest.raises(DataError, match="options must be a ReadOptions, got dict"):
        ReadOptions.split({}, {"scoring": "binary"})  # type: ignore[arg-type]
    assert ReadOptions(scoring="ordinal", categories=[3, 2, 1], require_benchmark=True).recorded() == {
        "scoring": "ordinal",
        "categories": [3, 2, 1],
        "require_benchmark": True,
    }


def test_a_misspelt_keyword_is_a_type_error_naming_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("subject,item,response\na,q1,1\n")
    with pytest.raises(TypeError, match=r"load_long\(\) got an unexpected keyword argument 'scorng' \(did you mean"):
        io.load(path, scorng="binary")
    with pytest.raises(TypeError, match=r"load_lm_eval\(\) got an unexpected keyword argument 'metrc'"):
        load_lm_eval(FIXTURES / "lm_eval" / "lm_eval_dummy", metrc="acc")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"ResponseData.from_long\(\) got an unexpected keyword argument 'bin'"):
        ResponseData.from_long(pd.read_csv(path), bin=[0.5])  # type: ignore[call-arg]


# ------------------------------------------------------------------------------------- every loader takes it

#: (loader, path, the loader's own keywords, the read options as fields): options that change how the data are
#: read (a declared or binned scale, or a scoring other than the default) wherever the format allows them.
LOADERS: dict[str, tuple[Callable[..., ResponseData], Path, dict[str, Any], dict[str, Any]]] = {
    "long": (
        load_long,
        FIXTURES / "xstest_labels_slice.csv",
        {"subject": "model", "item": "id", "response": "final_label"},
        {"scoring": "ordinal", "categories": XSTEST_ORDER},
    ),
    "wide": (load_wide, FIXTURES / "science_mirt.csv", {}, {"scoring": "ordinal", "bins": [2, 4]}),
    "pyirt": (load_pyirt, FIXTURES / "pyirt" / "sst3_slice.jsonlines", {}, {"scoring": "binary"}),
    "lm-eval": (
        load_lm_eval,
        FIXTURES / "lm_eval" / "lm_eval_dummy",
        {"filter": "strict-match"},
        {"scoring": "ordinal", "bins": [0.5]},
    ),
    "helm": (load_helm, FIXTURES / "helm", {}, {"scoring": "ordinal", "bins": [0.5], "require_benchmark": True}),
    "leaderboard": (load_leaderboard, FIXTURES / "leaderboard", {}, {"scoring": "binary"}),
    "inspect": (load_inspect, FIXTURES / "inspect" / "logs", {}, {"scoring": "fraction"}),
    "lighteval": (load_lighteval, FIXTURES / "lighteval" / "output", {}, {"scoring": "ordinal", "bins": [0.5]}),
    "opencompass": (load_opencompass, FIXTURES / "opencompass" / "outputs" / "default", {}, {"scoring": "fraction"}),
    "dataset": (load_folder, data_root() / "lsat7", {}, {"scoring": "binary", "require_benchmark": True}),
}


@pytest.mark.parametrize("fmt", list(LOADERS))
def test_each_loader_reads_the_same_data_from_the_object_and_from_keywords(fmt: str) -> None:
    loader, path, own, fields = LOADERS[fmt]
    by_object = loader(path, options=ReadOptions(**fields), **own)
    by_keywords = loader(path, **own, **fields)
    assert by_object.checksum() == by_keywords.checksum()
    loaded = io.load(path, options=ReadOptions(**fields), **own)
    assert loaded.checksum() == io.load(path, **own, **fields).checksum() == by_object.checksum()
    assert loaded.reading is not None and loaded.reading["format"] == fmt
    expected = {**ReadOptions(**fields).recorded(), **own}
    assert loaded.reading["options"] == expected  # flat keys, as saved fits recorded them before
    assert io.reread(loaded.reading).checksum() == loaded.checksum()


def test_a_reading_recorded_before_the_object_reads_the_same(tmp_path: Path) -> None:
    card = {
        "path": str(FIXTURES / "science_mirt.csv"),
        "format": "wide",
        "options": {"scoring": "ordinal", "bins": [2, 4]},
    }
    again = io.reread(card)
    assert (
        again.checksum()
        == load_wide(FIXTURES / "science_mirt.csv", options=ReadOptions(scoring="ordinal", bins=[2, 4])).checksum()
    )
    assert again.reading is not None and again.reading["options"] == {"scoring": "ordinal", "bins": [2.0, 4.0]}


def test_keywords_override_the_object_in_a_loader() -> None:
    path = FIXTURES / "science_mirt.csv"
    data = load_wide(path, options=ReadOptions(scoring="ordinal", bins=[2, 4]), bins=[3])
    assert data.items["categories"].iloc[0] == "<3 | >=3"


def test_the_constructors_take_the_object() -> None:
    frame = pd.DataFrame({"subject": ["a", "a", "b", "b"], "item": ["q1", "q2"] * 2, "response": [1, 4, 2, 3]})
    options = ReadOptions(scoring="ordinal", categories=[4, 3, 2, 1])
    assert (
        ResponseData.from_long(frame, options=options).checksum()
        == ResponseData.from_long(frame, scoring="ordinal", categories=[4, 3, 2, 1]).checksum()
    )
    wide = frame.pivot(index="subject", columns="item", values="response")
    assert ResponseData.from_wide(wide, options=options).values.tolist() == [3.0, 0.0, 2.0, 1.0]
    with pytest.raises(DataError, match="have no benchmark label"):
        ResponseData.from_wide(wide, options=dataclasses.replace(options, require_benchmark=True))


# -------------------------------------------------------------------------- loaders that refuse some options


@pytest.mark.parametrize(
    ("loader", "path", "recorded"),
    [
        (load_leaderboard, FIXTURES / "leaderboard", "Open LLM Leaderboard details log 0/1 accuracies per sample"),
        (load_opencompass, FIXTURES / "opencompass" / "outputs" / "default", "OpenCompass details record whether"),
    ],
)
def test_sources_of_correct_or_not_refuse_ordinal_options(
    loader: Callable[..., ResponseData], path: Path, recorded: str
) -> None:
    with pytest.raises(DataError, match=f"^{path}: {recorded}.*not graded categories; ordinal scoring does not apply"):
        loader(path, options=ReadOptions(scoring="ordinal", bins=[0.5]))


def test_a_data_set_checks_the_options_against_its_manifest() -> None:
    folder = data_root() / "lsat7"
    with pytest.raises(DataError, match="scoring='ordinal' asked for ordinal responses, but this data set holds"):
        load_folder(folder, scoring="ordinal")
    with pytest.raises(DataError, match="declares its own categories in its manifest; bins apply to files"):
        load_dataset("lsat7", options=ReadOptions(scoring="ordinal", bins=[0.5]))
    with pytest.raises(DataError, match=r"unknown option\(s\) \['metric'\]; accepted options: benchmarks"):
        io.load(folder, metric="acc")
