"""The rewritten graphs of the model's functions, kept on disk by :mod:`irtbayes.fitting.graphcache`."""

from __future__ import annotations

import logging

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from test_compiled import _expand, _logp  # tests/fitting is on sys.path (rootdir-relative imports)

from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting import graphcache
from irtbayes.fitting.compiled import compile_model
from irtbayes.model.build import build_model
from irtbayes.model.spec import ModelSpec


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty folder of graphs for the test."""
    monkeypatch.setattr(graphcache, "graph_folder", lambda: tmp_path / "graphs")
    return tmp_path / "graphs"


def _compiled(data, spec, folder):
    """The model of ``data`` compiled with its graphs in ``folder``; and what happened to its two graphs."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("irtbayes.fitting.graphcache")
    handler, level = Keep(level=logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(graphcache, "graph_folder", lambda: folder)
            compiled = compile_model(build_model(data, spec))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    outcomes = [m.rsplit(" ", 1)[-1] for m in records if m.startswith("graph ")]
    return compiled, outcomes


def _same_bits(one, other, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for x in (np.asarray(one.initial_point_func(seed)), rng.normal(0, 0.5, one.n_dim)):
        code, value, grad = _logp(one, x)
        code_other, value_other, grad_other = _logp(other, x)
        assert code == code_other == 0
        assert value.hex() == value_other.hex()
        assert grad.tobytes() == grad_other.tobytes()
        np.testing.assert_array_equal(_expand(one, x)[1], _expand(other, x)[1])
        for function, function_other in ((one.logp_func, other.logp_func), (one.expand_func, other.expand_func)):
            for a, b in zip(function(x), function_other(x), strict=True):
                assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _stored_loaded_fresh(kind: str, categories: int | None, root):
    """A model that stores its graphs; one of the same structure and other data (other subjects, items and
    answers) that loads them; the same rewritten afresh in an empty folder."""
    spec = ModelSpec(kind=kind)
    first_data, _ = simulate_responses(30, 9, kind=kind, n_categories=categories, n_benchmarks=3, seed=6)
    data, _ = simulate_responses(37, 8, kind=kind, n_categories=categories, n_benchmarks=3, missing=0.3, seed=7)
    first, stored = _compiled(first_data, spec, root / "graphs")
    loaded, reloaded = _compiled(data, spec, root / "graphs")
    fresh, rewritten = _compiled(data, spec, root / "empty")
    return {"first": first, "loaded": loaded, "fresh": fresh, "outcomes": (stored, reloaded, rewritten)}


@pytest.fixture(scope="module")
def two_pl(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs")
    return root, _stored_loaded_fresh("2pl", None, root)


def _check_stored_loaded_fresh(root, made) -> None:
    assert made["outcomes"] == (["stored", "stored"], ["loaded", "loaded"], ["stored", "stored"])
    assert len(list((root / "graphs").glob("*.pkl"))) == 2
    assert not list((root / "graphs").glob(".*"))  # no temporary file left behind
    assert made["loaded"].n_dim == made["fresh"].n_dim != made["first"].n_dim
    _same_bits(made["loaded"], made["fresh"], seed=2)


def test_a_stored_graph_is_loaded_for_other_data_and_computes_what_rewriting_computes(two_pl):
    """The first model rewrites and stores its two graphs; a model of the same structure and other data loads
    them, and computes the same bits as the same model rewritten afresh, reading its own data."""
    _check_stored_loaded_fresh(*two_pl)


@pytest.mark.slow
def test_a_graded_model_s_stored_graph_computes_what_rewriting_computes(tmp_path):
    _check_stored_loaded_fresh(tmp_path, _stored_loaded_fresh("grm", 4, tmp_path))


def test_the_key_changes_with_the_structure_and_constants_and_not_with_the_data(folder):
    """Another prior scale (a constant of the graph) or another op gives another key; the same graph over other
    shared values gives the same key, and the shared variables in the order the key met them."""
    x = pt.dvector("x")
    data = pytensor.shared(np.arange(3.0), "data")

    def key(scale: float, op=pt.exp, values=None):
        if values is not None:
            data.set_value(values)
        return graphcache.graph_key([x], [op(x * scale).sum() + data.sum()])

    base, shared = key(2.0)
    assert shared == [data]
    assert key(2.5)[0] != base
    assert key(2.0, op=pt.log)[0] != base
    assert key(2.0, values=np.arange(5.0) * 7)[0] == base
    assert (
        graphcache.graph_key([x], [(x * 2.0).sum()], check_bounds=False)[0]
        != graphcache.graph_key([x], [(x * 2.0).sum()])[0]
    )
    with pytensor.config.change_flags(numba__fastmath=not pytensor.config.numba__fastmath):
        assert key(2.0)[0] != base


def test_a_damaged_stored_graph_is_rewritten_and_replaced(folder, caplog):
    """A stored graph cut short (as a full disk would leave it) is read, refused with a log line, rewritten and
    written again; the function computes what it should, from the caller's shared data."""
    import pymc as pm

    x = pt.dvector("x")
    data = pytensor.shared(np.arange(3.0), "data")
    outputs = [(pt.exp(x) * data).sum()]
    assert graphcache.compile_function([x], outputs, model=pm.Model())[1] == "stored"
    (path,) = folder.glob("*.pkl")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with caplog.at_level(logging.INFO, logger="irtbayes.fitting.graphcache"):
        again, outcome = graphcache.compile_function([x], outputs, model=pm.Model())
    assert outcome == "stored" and "could not be read" in caplog.text
    assert len(path.read_bytes()) > len(whole) // 2  # written whole again
    data.set_value(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(again(np.zeros(3))[0], 7.0)
    assert graphcache.compile_function([x], outputs, model=pm.Model())[1] == "loaded"


def test_a_graph_the_key_cannot_read_is_compiled_and_not_stored(folder):
    """An op compared by identity (no ``__props__``: two instances may differ in state the key cannot see), a
    closure, a random generator: not keyed; such a function is compiled as usual and nothing is written."""
    import pymc as pm
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

    class Twice(Op):
        def make_node(self, v):
            return Apply(self, [v], [v.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = 2 * inputs[0]

    x = pt.dvector("x")
    with pytest.raises(graphcache._Unkeyable, match="without __props__"):
        graphcache.graph_key([x], [Twice()(x)])
    with pytest.raises(graphcache._Unkeyable, match="function"):
        graphcache._canonical(lambda: None)
    rng = pytensor.shared(np.random.default_rng(1))
    _, draw = pt.random.normal(0, 1, size=3, rng=rng, return_next_rng=True)
    function, outcome = graphcache.compile_function([x], [(x + draw).sum()], model=pm.Model())
    assert outcome == "uncached"
    assert np.isfinite(function(np.zeros(3))[0])
    assert not folder.exists()
    function, outcome = graphcache.compile_function([x], [pt.exp(x).sum()], model=pm.Model())
    assert outcome == "stored" and function(np.zeros(3))[0] == 3.0
    assert len(list(folder.glob("*.pkl"))) == 1
