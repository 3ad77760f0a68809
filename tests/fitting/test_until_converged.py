"""Sample until converged: the stop rule on scripted samplers, and one real nutpie fit."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.until_converged import StopRule, sample_until_converged


def _tree(n_draws: int, *, mixed: bool, filled: int | None = None, seed: int = 0) -> xr.DataTree:
    """4 chains x n_draws of 5 parameters; chains agree (mixed) or sit 1 sd apart; draws after ``filled`` NaN."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((4, n_draws, 5))
    if not mixed:
        values += np.arange(4)[:, None, None]
    energy = rng.standard_normal((4, n_draws))
    if filled is not None:
        values[:, filled:] = np.nan
        energy[:, filled:] = np.nan
    posterior = xr.Dataset(
        {"difficulty": (("chain", "draw", "item"), values)},
        coords={"chain": np.arange(4), "draw": np.arange(n_draws), "item": [f"i{k}" for k in range(5)]},
    )
    stats = xr.Dataset(
        {
            "diverging": (("chain", "draw"), np.zeros((4, n_draws), dtype=bool)),
            "energy": (("chain", "draw"), energy),
        },
        coords={"chain": np.arange(4), "draw": np.arange(n_draws)},
    )
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})


class _Scripted:
    """A stand-in for nutpie's background sampler: ``per_poll`` more draws appear at each look at them."""

    def __init__(self, *, total: int, per_poll: int, mixed: bool) -> None:
        self.total, self.per_poll, self.mixed = total, per_poll, mixed
        self.polls = 0
        self.aborted = False

    @property
    def done(self) -> int:
        return min(self.total, self.polls * self.per_poll)

    @property
    def is_finished(self) -> bool:
        if self.done < self.total:
            raise TimeoutError("Timeout while waiting for sampler to finish")
        return True

    def inspect(self) -> xr.DataTree:
        self.polls += 1
        return _tree(self.total, mixed=self.mixed, filled=self.done)

    def abort(self) -> xr.DataTree:
        self.aborted = True
        return _tree(self.total, mixed=self.mixed, filled=self.done)

    def wait(self) -> xr.DataTree:
        return _tree(self.total, mixed=self.mixed)


def test_stops_as_soon_as_the_checks_pass():
    sampler = _Scripted(total=5000, per_poll=100, mixed=True)
    rule = StopRule(ess_min=400, min_draws=200)
    tree = sample_until_converged(sampler, rule, poll=0.0)
    assert rule.outcome == "converged" and sampler.aborted
    assert 200 <= rule.draws_done < 5000
    assert tree["posterior"].sizes["draw"] == rule.draws_done
    assert np.isfinite(tree["posterior"]["difficulty"].values).all()
    assert rule.history[-1]["ok"] and rule.checks >= 1


def test_each_check_reads_exactly_the_planned_draws():
    """The chains run past a check's draws by as much as timing allows; the check reads the planned number."""
    sampler = _Scripted(total=5000, per_poll=137, mixed=False)  # reads at 137, 274, ... overshoot every plan
    rule = StopRule(min_draws=200)
    sample_until_converged(sampler, rule, poll=0.0)
    planned = [200] + [h["next"] for h in rule.history[:-1]]
    assert [h["draws"] for h in rule.history] == planned


def test_runs_to_the_most_draws_when_chains_disagree():
    sampler = _Scripted(total=600, per_poll=100, mixed=False)
    rule = StopRule(min_draws=200)
    tree = sample_until_converged(sampler, rule, poll=0.0)
    assert rule.outcome == "most draws" and not sampler.aborted
    assert tree["posterior"].sizes["draw"] == 600
    assert rule.history and not any(h["ok"] for h in rule.history)
    assert any("r-hat" in p for h in rule.history for p in h["problems"])


def test_budget_stops_and_keeps_the_draws_so_far():
    sampler = _Scripted(total=10_000, per_poll=0, mixed=False)
    rule = StopRule(budget_s=0.05, min_draws=10_000)
    tree = sample_until_converged(sampler, rule, poll=0.01)
    assert rule.outcome == "budget" and sampler.aborted
    assert tree["posterior"].sizes["draw"] == rule.draws_done < 10_000


def test_until_converged_needs_nutpie():
    data, _ = simulate_responses(20, 10, seed=1)
    with pytest.raises(SpecError, match="until_converged"):
        fit(data, sampler="pymc", until_converged=True)


# a real NUTS fit stopped by its checks: 18 s on empty caches; the stop rule is tested above on given chains
@pytest.mark.slow
def test_a_real_fit_stops_early_and_records_it(monkeypatch):
    import irtbayes.fitting.until_converged as adaptive

    data, _ = simulate_responses(40, 30, seed=2)
    # screens of 10 of the 30 items, so a screen that passes is followed by a read of every draw
    monkeypatch.setattr(adaptive, "SCREEN_ELEMENTS", 10)
    import irtbayes.fitting.sampling as sampling

    copies, pauses, folders, stored = [], [], [], []
    monkeypatch.setattr(adaptive, "nutpie_trace", lambda s, f=adaptive.nutpie_trace: copies.append(1) or f(s))
    monkeypatch.setattr(
        adaptive, "_pause", lambda s, f=adaptive._pause: pauses.append(1) or stored.append(_stored(folders)) or f(s)
    )
    monkeypatch.setattr(sampling, "TRACE_IN_MEMORY_MAX", 0)  # this small trace to disk too, as large ones go
    collected: list[int] = []  # each check's trees collected (as for large draws)
    monkeypatch.setattr(adaptive, "COLLECT_BYTES", 0)
    monkeypatch.setattr(adaptive.gc, "collect", lambda *a, f=adaptive.gc.collect: collected.append(1) or f(*a))
    real_mkdtemp = sampling.tempfile.mkdtemp
    monkeypatch.setattr(sampling.tempfile, "mkdtemp", lambda **kw: folders.append(real_mkdtemp(**kw)) or folders[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # far more draws than a converged fit needs, and a budget in case the checks never pass
        result = fit(
            data, sampler="nutpie", chains=2, draws=100_000, seed=3, progress=False, until_converged=True, budget_s=90
        )
    record = result.sampler["until_converged"]
    assert record["outcome"] in ("converged", "budget")
    assert result.sampler["draws_max"] == 100_000  # draws given: the most per chain
    assert result.sampler["draws"] == record["draws_done"] == result.posterior.sizes["draw"]
    assert result.sampler["draws"] < result.sampler["draws_max"]
    assert all(0 < h["seconds"] < 90 for h in record["history"])  # how long each check kept the chains waiting
    assert len(collected) >= len(record["history"])
    # the draws were read to the check's length, not cut from longer arrays (whose views the audit would copy)
    assert all(v.values.flags["C_CONTIGUOUS"] for v in result.posterior.data_vars.values())
    if record["outcome"] == "converged":
        assert record["history"][-1]["ok"]
        assert result.diagnostics.ok
    # nutpie's trace is looked at once per pause, also when a passing screen reads every draw after it (the
    # converged case; a reader that copied at each read made 4 copies for 3 pauses), and once before the first
    # pause, to learn the store's chunks
    assert len(copies) == len(pauses) + 1 > 1
    # the draws went to a Zarr store in a temporary folder, which is removed (in a thread) once the fit has them in
    # memory
    assert len(folders) == 1 and all(stored), (folders, stored)
    for remover in sampling._REMOVING:
        remover.join()
    assert not Path(folders[0]).exists()
    assert result.posterior["difficulty"].dtype == np.float32  # as a fit holds item draws


def _stored(folders: list[str]) -> bool:
    """Whether the one temporary folder made so far holds a Zarr store."""
    return len(folders) == 1 and (Path(folders[0]) / "zarr.json").is_file()


def test_next_check_grows_with_the_ess_shortfall_and_waits_out_divergences():
    from irtbayes.fitting.diagnostics.verdict import Diagnostics, VariableDiagnostics

    def diag(ess: float, rhat: float = 1.004, divergences: int = 0) -> Diagnostics:
        var = VariableDiagnostics("difficulty", 3, rhat, "difficulty[a]", ess, "difficulty[b]", 900.0, "difficulty[c]")
        return Diagnostics(ok=False, approximate=False, thresholds={}, variables=[var], divergences=divergences)

    rule = StopRule(ess_min=400, planned=1000)
    assert rule.next_check(500, diag(200.0)) == 1100  # ESS grows with the draws: 2x, and 10% to spare
    assert rule.next_check(500, diag(390.0)) == 600  # at least 1.2x
    assert rule.next_check(200, diag(20.0)) == 600  # at most 3x
    assert rule.next_check(500, diag(800.0, rhat=1.02)) == 750  # r-hat far over: at most 1.5x
    assert rule.next_check(900, diag(800.0, rhat=1.011)) == 1089  # close: where r-hat - 1 would be 10% under 0.01
    assert rule.next_check(900, diag(800.0, rhat=1.0101)) == 1080  # barely over: at least 1.2x
    assert rule.next_check(500, diag(float("nan"))) == 1500  # nothing to extrapolate from
    assert rule.next_check(200, diag(800.0, divergences=2)) == 1000  # divergences: the usual draws first


class _Diverging(_Scripted):
    """Mixed chains whose first draw diverged."""

    def _mark(self, tree: xr.DataTree) -> xr.DataTree:
        stats = tree["sample_stats"].to_dataset()
        stats["diverging"][:, 0] = True
        return xr.DataTree.from_dict({"posterior": tree["posterior"].to_dataset(), "sample_stats": stats})

    def inspect(self) -> xr.DataTree:
        return self._mark(super().inspect())

    def abort(self) -> xr.DataTree:
        return self._mark(super().abort())


def test_divergences_stop_the_run_once_the_usual_draws_are_done():
    sampler = _Diverging(total=5000, per_poll=100, mixed=True)
    rule = StopRule(min_draws=200, planned=600)
    tree = sample_until_converged(sampler, rule, poll=0.0)
    assert rule.outcome == "divergences" and sampler.aborted
    assert [h["draws"] for h in rule.history] == [200, 600]  # the next check waits for the usual draws
    assert rule.history[0]["divergences"] == 4 and rule.history[0]["next"] == 600
    assert tree["posterior"].sizes["draw"] == rule.draws_done == 600


class _Ticking(_Scripted):
    """Draws that appear with time (10 more at each look at whether sampling is finished), not with reads."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ticks = 0
        self.reads = 0

    @property
    def done(self) -> int:
        return min(self.total, 10 * self.ticks)

    @property
    def is_finished(self) -> bool:
        self.ticks += 1
        return self.done >= self.total

    def inspect(self) -> xr.DataTree:
        self.reads += 1
        return _tree(self.total, mixed=self.mixed, filled=self.done)


def test_the_draw_counter_saves_reading_the_draws_before_each_check():
    counted = _Ticking(total=5000, per_poll=0, mixed=True)
    rule = StopRule(ess_min=400, min_draws=200)
    sample_until_converged(counted, rule, poll=0.0, draws_done=lambda: counted.done)
    assert rule.outcome == "converged" and rule.draws_done >= 200
    assert counted.reads == rule.checks  # the draws were read only to be checked
    uncounted = _Ticking(total=5000, per_poll=0, mixed=True)
    sample_until_converged(uncounted, StopRule(ess_min=400, min_draws=200), poll=0.0)
    assert uncounted.reads > 10 * counted.reads  # without the counter, every poll reads them


class _Chunked(_Ticking):
    """A trace in a Zarr store: draws reach it 16 at a time, once a chunk is done, and the store says so."""

    def inspect(self) -> xr.DataTree:
        self.reads += 1
        tree = _tree(self.total, mixed=self.mixed, filled=self.done // 16 * 16)
        tree["sample_stats"]["energy"].encoding["preferred_chunks"] = {"chain": 1, "draw": 16}
        return tree


def test_a_stored_trace_is_read_once_its_chunk_is_done():
    """A check of a trace in a Zarr store waits for the chunk that holds its last draw, so no read comes up short
    and is made again (each read of a stored trace reads every parameter)."""
    stored = _Chunked(total=5000, per_poll=0, mixed=True)
    rule = StopRule(ess_min=400, min_draws=200)  # 200 is not a multiple of 16: the store has it at 208
    sample_until_converged(stored, rule, poll=0.0, draws_done=lambda: stored.done, stored=True)
    assert rule.outcome == "converged"
    assert [h["draws"] for h in rule.history][:1] == [200]
    assert stored.reads == rule.checks + 1  # the first opened the store to learn its chunks, reading no draws


def _items_tree(n_items: int, *, bad: int | None, n_draws: int = 1000, seed: int = 4) -> xr.DataTree:
    """4 chains of ``n_items`` independent normal difficulties and a scalar; item ``bad`` sits elsewhere in chain 0."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((4, n_draws, n_items))
    if bad is not None:
        values[0, :, bad] += 1.0
    chains, draws = np.arange(4), np.arange(n_draws)
    posterior = xr.Dataset(
        {
            "difficulty": (("chain", "draw", "item"), values),
            # a second variable along the same dim: a screen must cut both at the same items
            "discrimination": (("chain", "draw", "item"), np.exp(0.1 * rng.standard_normal((4, n_draws, n_items)))),
            "difficulty_mu": (("chain", "draw"), rng.standard_normal((4, n_draws))),
        },
        coords={"chain": chains, "draw": draws, "item": [f"item{k:04d}" for k in range(n_items)]},
    )
    stats = xr.Dataset(
        {
            "diverging": (("chain", "draw"), np.zeros((4, n_draws), dtype=bool)),
            "energy": (("chain", "draw"), rng.standard_normal((4, n_draws))),
        },
        coords={"chain": chains, "draw": draws},
    )
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})


def _one_check(adaptive, tree: xr.DataTree, rule: StopRule):  # type: ignore[no-untyped-def]
    """A check as sample_until_converged makes one, on ``tree`` as the draws so far."""

    def read(positions=None):  # type: ignore[no-untyped-def]
        return adaptive._cut(tree, positions) if positions else tree

    positions = adaptive._screen_positions(rule.sizes, rule.watch, shift=len(rule.history)) if rule.sizes else {}
    return adaptive._check(read(positions), read, rule, positions)


def test_a_failed_screen_is_a_failed_check_and_only_the_full_check_stops(monkeypatch):
    import irtbayes.fitting.until_converged as adaptive

    monkeypatch.setattr(adaptive, "SCREEN_ELEMENTS", 64)
    # 400 items, two variables each: a screen looks at every 12th item (shifted by one at each check), so item
    # 200 is in neither sample
    tree = _items_tree(400, bad=200)
    rule = StopRule()
    first = _one_check(adaptive, tree, rule)
    # the screen passed (it missed item 200), so the full check ran, found it, and the rule watches it
    assert "screened" not in rule.history[0]
    assert not first.ok and "difficulty[item0200]" in first.problems[0]
    assert len(first.parameters) == 801
    assert 200 in rule.watch["item"]
    second = _one_check(adaptive, tree, rule)
    # now the screen holds item 200 and fails by itself: no full check
    assert rule.history[1]["screened"] < rule.history[1]["parameters"] == 801
    assert not second.ok and "difficulty[item0200]" in second.problems[0]
    assert not any("non-finite" in p for p in second.problems)
    assert len(second.parameters) == rule.history[1]["screened"]


def test_the_passing_check_covers_every_parameter_and_is_kept_for_the_fit(monkeypatch):
    import irtbayes.fitting.until_converged as adaptive

    monkeypatch.setattr(adaptive, "SCREEN_ELEMENTS", 64)

    class _Done(_Scripted):
        def inspect(self) -> xr.DataTree:
            self.polls += 1
            return _items_tree(400, bad=None)

        def abort(self) -> xr.DataTree:
            self.aborted = True
            return _items_tree(400, bad=None)

    rule = StopRule(min_draws=1000)  # the scripted trace has 1,000 draws per chain: check them all
    tree = sample_until_converged(_Done(total=1000, per_poll=1000, mixed=True), rule, poll=0.0)
    assert rule.outcome == "converged" and rule.passed is not None and rule.passed.ok
    assert len(rule.passed.parameters) == 801  # the full check, not the screen
    assert rule.passed.n_draws == tree["posterior"].sizes["draw"] == rule.draws_done == 1000


def test_a_converged_fit_reuses_the_passing_check(monkeypatch):
    import irtbayes.fitting.fit as fit_module

    calls = []
    original = fit_module.check_convergence
    monkeypatch.setattr(fit_module, "check_convergence", lambda *a, **k: calls.append(1) or original(*a, **k))
    data, _ = simulate_responses(40, 30, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, sampler="nutpie", chains=2, draws=20_000, seed=3, progress=False, until_converged=True)
    assert result.sampler["until_converged"]["outcome"] == "converged"
    assert not calls  # the passing check was made on these very draws, derived variables included
    assert "intercept" in set(result.diagnostics.parameters["variable"])
    assert result.diagnostics.ok and result.diagnostics.n_draws == result.posterior.sizes["draw"]


def test_reading_nutpie_s_arrow_trace_gives_its_draws_and_only_what_the_checks_need():
    import time

    import nutpie

    from irtbayes.fitting.compiled import compile_model
    from irtbayes.fitting.trace import CHECKED_STATS, read_nutpie_draws
    from irtbayes.model.build import build_model
    from irtbayes.model.spec import ModelSpec

    data, _ = simulate_responses(40, 30, seed=2)
    # the fits' own compiled model: the structure of the test above, loaded from the disk caches
    compiled = compile_model(build_model(data, ModelSpec()))
    run = nutpie.sample(
        compiled, draws=100_000, tune=100, chains=2, cores=2, seed=1, blocking=False, progress_bar=False
    )
    try:
        for _ in range(200):
            time.sleep(0.1)
            ours = read_nutpie_draws(run)
            if ours is not None and ours["posterior"].sizes["draw"] >= 50:
                break
        run.pause()
        ours = read_nutpie_draws(run)
        theirs = run.inspect()
        cut = read_nutpie_draws(run, {"item": np.array([0, 7, 29])})
        short = read_nutpie_draws(run, most=20)
    finally:
        run.cancel()
    assert ours is not None and cut is not None and short is not None
    # at most 20 draws per chain, read as whole arrays (no views of longer ones), equal to the first 20
    assert short["posterior"].sizes["draw"] == 20 and short["sample_stats"].sizes["draw"] == 20
    assert short["posterior"]["difficulty"].values.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(
        short["posterior"]["difficulty"].values, ours["posterior"]["difficulty"].values[:, :20]
    )
    posterior, length = ours["posterior"].to_dataset(), ours["posterior"].sizes["draw"]
    assert length >= 50
    expected = theirs["posterior"].to_dataset().isel(draw=slice(0, length))
    assert sorted(posterior.data_vars) == sorted(n for n in expected.data_vars if not str(n).endswith("_z"))
    for name in posterior.data_vars:  # the warm-up left out, the draws themselves unchanged (item draws as a fit
        # holds them, in irtbayes.fitting.result.DRAWS_DTYPE)
        want = expected[name].values
        assert posterior[name].dtype == (np.float32 if "item" in expected[name].dims else want.dtype)
        np.testing.assert_array_equal(posterior[name].values, want.astype(posterior[name].dtype))
        assert posterior[name].dims == expected[name].dims
    assert list(posterior["item"].values) == list(expected["item"].values)
    stats = theirs["sample_stats"].to_dataset().isel(draw=slice(0, length))
    assert sorted(ours["sample_stats"].data_vars) == sorted(CHECKED_STATS)
    for name in CHECKED_STATS:
        np.testing.assert_array_equal(ours["sample_stats"][name].values, stats[name].values)
    cut_difficulty = cut["posterior"]["difficulty"].isel(draw=slice(0, length))
    assert list(cut_difficulty["item"].values) == [data.item_ids[k] for k in (0, 7, 29)]
    np.testing.assert_array_equal(cut_difficulty.values, posterior["difficulty"].isel(item=[0, 7, 29]).values)


def _stored_tree(values: np.ndarray, energy: np.ndarray) -> xr.DataTree:
    posterior = xr.Dataset({"difficulty": (("chain", "draw", "item"), values)}, coords={"item": ["a", "b", "c"]})
    stats = xr.Dataset({"energy": (("chain", "draw"), energy)})
    stats["energy"].encoding["preferred_chunks"] = {"chain": 1, "draw": 16}
    posterior["difficulty"].encoding["preferred_chunks"] = {"chain": 1, "draw": 16, "item": 3}
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})


def test_a_stored_trace_read_again_reads_only_the_draws_since():
    """Each check of a stored trace reads the draws since the last one: the cache gives the earlier draws, the
    store the rest, and the result equals a read of the whole store."""
    from irtbayes.fitting.trace import read_stored_draws

    rng = np.random.default_rng(5)
    values = rng.normal(size=(2, 400, 3))
    energy = rng.normal(size=(2, 400))
    early = values.copy()
    early[:, 150:], energy_early = np.nan, energy.copy()
    energy_early[:, 150:] = np.nan
    cache: dict[tuple[str, str], np.ndarray] = {}
    first = read_stored_draws(_stored_tree(early, energy_early), cache=cache)
    assert first["posterior"].sizes["draw"] == 150
    np.testing.assert_array_equal(first["posterior"]["difficulty"].values, early[:, :150].astype("float32"))
    # later: 300 draws done in chain 0 and 280 in chain 1; the first 150 marked so a re-read would show
    later = values.copy()
    later[:, :150] = 99.0
    later[0, 300:], later[1, 280:] = np.nan, np.nan
    energy_later = energy.copy()
    energy_later[0, 300:], energy_later[1, 280:] = np.nan, np.nan
    second = read_stored_draws(_stored_tree(later, energy_later), cache=cache)
    got = second["posterior"]["difficulty"].values
    assert got.shape == (2, 280, 3)
    assert not (got == 99.0).any()  # the first 150 draws came from the cache, not the store
    np.testing.assert_array_equal(got, values[:, :280].astype("float32"))
    np.testing.assert_array_equal(second["sample_stats"]["energy"].values, energy[:, :280])
    whole = read_stored_draws(_stored_tree(values, energy))  # no cache: everything read
    np.testing.assert_array_equal(whole["posterior"]["difficulty"].values[:, :280], got)
    # most=: at most that many draws per chain, whole arrays, cached as such; a later read goes on from there
    capped: dict[tuple[str, str], np.ndarray] = {}
    part = read_stored_draws(_stored_tree(values, energy), cache=capped, most=120)["posterior"]["difficulty"]
    assert part.shape == (2, 120, 3) and part.values.flags["C_CONTIGUOUS"] and part.values.base is None
    assert capped[("posterior", "difficulty")].shape == (2, 120, 3)
    more = read_stored_draws(_stored_tree(values, energy), cache=capped, most=250)["posterior"]["difficulty"]
    np.testing.assert_array_equal(more.values, values[:, :250].astype("float32"))
    # positions (a screen's cut) neither use nor fill the cache
    cut = read_stored_draws(_stored_tree(later, energy_later), {"item": np.array([1])}, cache=cache)
    assert (cut["posterior"]["difficulty"].values[:, :150] == 99.0).all()
    assert cache[("posterior", "difficulty")].shape == (2, 280, 3)
