"""Saved fits: ``save_fit(fit, path)`` and ``load_fit(path)``, the only DataTree I/O.

Saved fits are folders: ``posterior.nc`` (netCDF4 via h5netcdf), ``card.json`` (spec, priors, sampler
settings, seed, package versions, data checksum, diagnostics), ``items.csv`` and ``subjects.csv``. They are
written into a temporary folder beside the target and renamed into place, so an interrupted save leaves no
partial folder. Nothing is pickled.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import logging
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.core.files import read_json
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.fitting.result import FORMAT_VERSION, ITEM_PARAMETERS, Fit, as_held, derived_names
from irtbayes.model.build import add_derived
from irtbayes.model.spec import ModelSpec

__all__ = ["load_fit", "load_fit_data", "save_fit"]

log = logging.getLogger("irtbayes.fitting.fit")


def save_fit(result: Fit, path: str | os.PathLike[str], *, overwrite: bool = False, compress: bool = False) -> Path:
    """Write ``result`` to the folder ``path`` atomically.

    The folder gets ``posterior.nc`` (netCDF4 via h5netcdf), ``card.json`` (with the SHA-256 of
    ``posterior.nc`` and of the card itself, which :func:`load_fit` checks), ``items.csv`` and
    ``subjects.csv`` (summaries of the draws as stored, so they agree with the fit :func:`load_fit` returns).

    ``posterior.nc`` keeps what later steps read, and no more:

    - ``posterior``: every sampled parameter, its floating-point draws stored as float32 (7 significant
      digits; :func:`load_fit` returns them as a fit holds them, :func:`~irtbayes.fitting.result.as_held`:
      float32 for item variables, widened to float64 for the others), not compressed unless ``compress``
      (zlib level 1 with byte shuffling: posterior draws are close to noise in their last bits, so this saves
      little of the file and makes saving much longer; measured on docs/performance.md#saved-fits).
      Variables :func:`~irtbayes.model.build.add_derived` recomputes (``intercept``; ``discrimination`` of a 1PL)
      are not stored.
    - ``sample_stats``: only the fields the convergence checks read (``diverging``, ``energy``, tree-depth
      saturation and steps per draw), in their own dtypes (``energy`` stays float64: E-BFMI takes
      differences of large numbers). The sampler's other statistics (step size, log density, ...) are
      dropped.
    - ``constant_data``: unchanged.

    ``card.json`` records this as ``storage``: ``{"dtype": "float32", "compression": ..., "dropped": [...]}``,
    the dropped ``group/variable`` names and any other group of ``result.idata``, none of which is saved.
    The sizes and times of a saved fit, with and without compression, are measured by
    ``scripts/benchmark_storage.py`` (docs/performance.md#saved-fits).

    Everything is written into a temporary folder ``.<name>.tmp-<random>`` beside ``path``, flushed to
    disk, and renamed into place at the end, so ``path`` is at every moment either absent, the previous fit,
    or the new one, complete (an interrupt, a full disk or a killed process never leaves a half-written fit
    there; a killed process may leave the hidden temporary folder behind, which nothing reads). When two
    processes save to the same ``path`` at once, one complete fit ends up there, never a mix.

    Parameters
    ----------
    result
        The fit.
    path
        Target folder.
    overwrite
        Replace an existing folder (the old one is removed only after the new one is complete).
    compress
        Compress the posterior's draws (zlib level 1, with byte shuffling); any netCDF-4 reader undoes it.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FitError
        ``path`` exists and ``overwrite`` is False (also when another process saved there meanwhile), or the
        folder cannot be written (a full disk, no permission): the message names ``path`` and the reason, and
        a fit already at ``path`` is left unchanged.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.examples import simulated_fit
    >>> result, data = simulated_fit(20, 30, draws=50)
    >>> folder = save_fit(result, Path(tempfile.mkdtemp()) / "fit")
    >>> sorted(p.name for p in folder.iterdir())
    ['card.json', 'items.csv', 'posterior.nc', 'subjects.csv']
    >>> save_fit(result, folder)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.FitError: ...: already exists (pass overwrite=True to replace it)
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise FitError(f"{target}: already exists (pass overwrite=True to replace it)")
    tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        _write_fit_files(result, tmp, compress=compress)
        _sync_folder(tmp)
        _move_into_place(tmp, target, overwrite=overwrite)
        _sync_folder(target.parent, files=False)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        kept = "the fit already there is unchanged" if target.exists() else "nothing was saved"
        where = f" ({err.filename})" if err.filename and str(err.filename) != str(target) else ""
        raise FitError(f"{target}: the fit could not be saved: {err.strerror or err}{where}; {kept}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("saved fit to %s", target)
    return target


def _sync_folder(folder: Path, *, files: bool = True) -> None:
    """Flush the files of ``folder`` (and the folder itself) to disk, so a rename publishes complete files."""
    paths = [p for p in folder.iterdir() if p.is_file()] if files else []
    for p in [*paths, folder]:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            if p == folder:  # some systems cannot open a folder (Windows): its entries are then written through
                continue
            raise
        try:
            os.fsync(fd)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.EBADF):  # cannot be synced this way here: not an I/O error
                raise
        finally:
            os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where not supported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _move_into_place(tmp: Path, target: Path, *, overwrite: bool) -> None:
    """Rename the complete folder ``tmp`` to ``target``; with ``overwrite``, replace a folder already there.

    A rename never replaces a non-empty folder, so a fit that another process put at ``target`` meanwhile is
    kept (``overwrite=False``: FitError) or swapped out whole; ``target`` always holds one complete fit.
    """
    for _ in range(10):
        try:
            os.rename(tmp, target)
            return
        except OSError as err:
            if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
        if not overwrite:
            raise FitError(
                f"{target}: another process saved a fit here while this one was being written; that fit "
                "was kept and this one was not saved (pass overwrite=True to replace it)"
            )
        try:
            if _exchange(tmp, target):
                shutil.rmtree(tmp, ignore_errors=True)  # now the old fit
                return
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(target, old)
        except FileNotFoundError:
            continue  # another writer moved it away: try again
        try:
            os.rename(tmp, target)
        except OSError as err:
            _put_back(old, target)
            if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue  # another writer's fit arrived meanwhile: replace it in turn
            raise
        except BaseException:
            _put_back(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
        return
    raise FitError(f"{target}: other processes kept replacing the fit here; this one was not saved")


def _put_back(old: Path, target: Path) -> None:
    """Return the previous fit, moved aside to ``old``, to ``target``; drop it if another writer's fit is there."""
    try:
        os.rename(old, target)
    except OSError:
        shutil.rmtree(old, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _card_checksum(card: dict[str, Any]) -> str:
    """SHA-256 of the card's content less its own checksum, in a canonical JSON form."""
    body = {k: v for k, v in card.items() if k != "card_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


#: Floating-point dtype of the posterior draws in ``posterior.nc``; and its compression with ``compress=True``
#: (netCDF4/HDF5 filters).
_STORAGE_DTYPE = "float32"
_STORAGE_COMPRESSION: dict[str, Any] = {"zlib": True, "shuffle": True, "complevel": 1}
#: The ``sample_stats`` fields the convergence checks read (the others are not saved).
_KEPT_SAMPLE_STATS = ("diverging", "energy", "maxdepth_reached", "reached_max_treedepth", "n_steps", "tree_size")
#: The groups of a saved fit; any other group of ``Fit.idata`` is not saved.
_SAVED_GROUPS = ("posterior", "sample_stats", "constant_data")


def _storage_groups(result: Fit) -> tuple[dict[str, xr.Dataset], list[str]]:
    """The groups :func:`save_fit` writes, and the ``group/variable`` names it leaves out (derived ones aside)."""
    post = result.posterior.drop_vars([n for n in derived_names(result.spec) if n in result.posterior])
    groups = {"posterior": post}
    dropped: list[str] = []
    for name in result.idata.children:
        if name == "posterior":
            continue
        if name not in _SAVED_GROUPS:
            dropped.append(f"{name}/")
            continue
        ds = result.idata[name].to_dataset()
        if name == "sample_stats":
            extra = [str(v) for v in ds.data_vars if v not in _KEPT_SAMPLE_STATS]
            dropped.extend(f"{name}/{v}" for v in extra)
            ds = ds.drop_vars(extra)
        groups[name] = ds
    return groups, dropped


def _storage_encoding(groups: dict[str, xr.Dataset], *, compress: bool) -> dict[str, dict[str, dict[str, Any]]]:
    """netCDF encoding: float32 (and with ``compress``, compression) for the posterior's floating-point draws."""
    post = groups["posterior"]
    floats = [str(n) for n, v in post.data_vars.items() if np.issubdtype(v.dtype, np.floating)]
    filters = _STORAGE_COMPRESSION if compress else {}
    return {"/posterior": {n: {"dtype": _STORAGE_DTYPE, **filters} for n in floats}}


def _write_fit_files(result: Fit, folder: Path, *, compress: bool) -> None:
    """``posterior.nc``, ``card.json`` and the CSV tables; the tables from the draws as stored."""
    groups, dropped = _storage_groups(result)
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(result.idata.attrs)
    tree.attrs["format_version"] = FORMAT_VERSION
    tree.attrs["data_checksum"] = result.data_checksum
    tree.to_netcdf(folder / "posterior.nc", engine="h5netcdf", encoding=_storage_encoding(groups, compress=compress))
    card = result.card()
    card["storage"] = {
        "dtype": _STORAGE_DTYPE,
        "compression": f"zlib level {_STORAGE_COMPRESSION['complevel']}, shuffle" if compress else "none",
        "dropped": dropped,
    }
    card["posterior_sha256"] = _sha256(folder / "posterior.nc")
    card["card_sha256"] = _card_checksum(card)
    (folder / "card.json").write_text(json.dumps(card, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    stored = _as_stored(result, groups["posterior"])
    # item draws the fit holds in float32 are stored as they are: its own table (made once, and reused by the
    # report that follows an audit) is the stored fit's
    items = result if _items_as_stored(result) else stored
    items.items_table().to_csv(folder / "items.csv", index=False)
    stored.subjects_table().to_csv(folder / "subjects.csv", index=False)


def _items_as_stored(result: Fit) -> bool:
    """Whether every floating-point item variable of ``result`` is held in the stored dtype (float32)."""
    post = result.posterior
    item_vars = [post[n] for n in ITEM_PARAMETERS if n in post]
    return all(v.dtype == np.dtype(_STORAGE_DTYPE) for v in item_vars if np.issubdtype(v.dtype, np.floating))


def _as_stored(result: Fit, posterior: xr.Dataset) -> Fit:
    """``result`` with the posterior :func:`load_fit` returns from ``posterior.nc``, for the CSV tables."""
    floats = [n for n, v in posterior.data_vars.items() if np.issubdtype(v.dtype, np.floating)]
    # item draws a fit holds in float32 already are not copied
    narrow = posterior.assign({n: posterior[n].astype(_STORAGE_DTYPE, copy=False) for n in floats})
    tree = xr.DataTree.from_dict(
        {"posterior": add_derived(as_held(narrow), result.spec), "constant_data": result.constant_data}
    )
    return replace(result, idata=tree)


#: Card keys :func:`load_fit` leaves out of ``Fit.info`` (the fit's own fields, and the checksums); the others go there.
_NOT_INFO = (
    "format_version", "spec", "sampler", "data_checksum", "diagnostics", "approximate", "posterior_sha256",
    "card_sha256",
)  # fmt: skip


def load_fit(path: str | os.PathLike[str], *, data: ResponseData | None = None) -> Fit:
    """Read a fit saved by :func:`save_fit`.

    Posterior draws come back as a fit holds them (:func:`~irtbayes.fitting.result.as_held`): float32 for
    item variables, float64 (the float32 values, widened) for the others; fits saved in float64 by earlier
    versions load the same way. The card's ``storage`` (absent in older cards) is in
    ``Fit.info``.

    Parameters
    ----------
    path
        The fit folder.
    data
        When given, its checksum must match the one the fit was made from.

    Returns
    -------
    Fit

    Raises
    ------
    FitError
        Missing folder or file, a corrupt ``card.json`` or ``posterior.nc`` (named), a file edited or
        truncated after saving (their SHA-256 in the card differ; cards written before checksums were
        recorded load without this check), another format version, files that disagree with each other, or
        data with another checksum.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.examples import simulated_fit
    >>> from irtbayes.data.simulate import simulate_responses
    >>> result, data = simulated_fit(20, 30, draws=50)
    >>> folder = save_fit(result, Path(tempfile.mkdtemp()) / "fit")
    >>> loaded = load_fit(folder, data=data)
    >>> dict(loaded.posterior["ability"].sizes)
    {'chain': 2, 'draw': 50, 'subject': 20}
    >>> stored = result.posterior["difficulty"].values.astype("float32")  # draws are stored as float32
    >>> bool(np.array_equal(loaded.posterior["difficulty"].values, stored))
    True
    >>> other, _ = simulate_responses(20, 30, seed=2)
    >>> load_fit(folder, data=other)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.FitError: ...
    """
    card_path, post_path = _fit_paths(Path(path))
    card = _read_card(card_path, post_path)
    try:
        spec = ModelSpec.from_dict(card["spec"])
        diagnostics = Diagnostics.from_dict(card["diagnostics"])
    except (SpecError, KeyError, TypeError, ValueError, AttributeError) as err:  # AttributeError: not a mapping
        raise FitError(f"{card_path}: bad 'spec' or 'diagnostics' ({err})") from None
    tree = _read_posterior(post_path, data_checksum=card["data_checksum"])
    if data is not None and data.checksum() != card["data_checksum"]:
        raise FitError(
            f"{card_path}: the fit was made from other data (checksum {card['data_checksum'][:12]}, "
            f"the data given has {data.checksum()[:12]}: {data.source})"
        )
    groups = {name: tree[name].to_dataset() for name in tree.children}
    try:
        groups["posterior"] = add_derived(as_held(groups["posterior"]), spec)
    except KeyError as err:
        raise FitError(f"{post_path}: posterior variable {err} is missing") from None
    idata = xr.DataTree.from_dict(groups)
    idata.attrs.update({k: v for k, v in tree.attrs.items() if k != "format_version"})
    return Fit(
        idata=idata,
        spec=spec,
        sampler=dict(card["sampler"]),
        data_checksum=card["data_checksum"],
        diagnostics=diagnostics,
        info={k: v for k, v in card.items() if k not in _NOT_INFO},
    )


def _fit_paths(folder: Path) -> tuple[Path, Path]:
    """``card.json`` and ``posterior.nc`` of a saved fit's folder; FitError when either is missing."""
    if not folder.is_dir():
        aside = sorted(folder.parent.glob(f".{folder.name}.old-*")) if folder.parent.is_dir() else []
        hint = f"; a save interrupted while replacing it left the previous fit at {aside[-1]}" if aside else ""
        raise FitError(f"{folder}: no saved fit here (not a folder){hint}")
    card_path = folder / "card.json"
    post_path = folder / "posterior.nc"
    for p in (card_path, post_path):
        if not p.is_file():
            raise FitError(f"{p}: missing; a saved fit needs card.json and posterior.nc")
    return card_path, post_path


def _read_card(card_path: Path, post_path: Path) -> dict[str, Any]:
    """``card.json``, checked: its format version, both checksums it records, and the keys a fit needs."""
    card: dict[str, Any] = read_json(card_path, error=FitError)
    if "format_version" in card and card["format_version"] != FORMAT_VERSION:
        raise FitError(
            f"{card_path}: format version {card['format_version']!r}; this irtbayes reads version {FORMAT_VERSION}"
        )
    if "card_sha256" in card and card["card_sha256"] != _card_checksum(card):
        raise FitError(f"{card_path}: edited after it was saved (its content does not match its checksum)")
    if "posterior_sha256" in card and card["posterior_sha256"] != _sha256(post_path):
        raise FitError(
            f"{post_path}: truncated or edited after it was saved (its SHA-256 differs from the one in card.json)"
        )
    for key in ("format_version", "spec", "sampler", "data_checksum", "diagnostics"):
        if key not in card:
            raise FitError(f"{card_path}: key '{key}' is missing")
    return card


def _read_posterior(post_path: Path, *, data_checksum: str) -> xr.DataTree:
    """``posterior.nc``, loaded and checked: its groups, and that it comes from the fit with this data checksum."""
    try:
        with xr.open_datatree(post_path, engine="h5netcdf") as opened:
            tree = opened.load()
    except Exception as err:  # h5py/netCDF raise many kinds of errors for a damaged file
        raise FitError(f"{post_path}: cannot be read as netCDF ({type(err).__name__}: {err})") from None
    if "posterior" not in tree.children or "constant_data" not in tree.children:
        raise FitError(f"{post_path}: the posterior or constant_data group is missing")
    if str(tree.attrs.get("data_checksum")) != data_checksum:
        raise FitError(f"{post_path}: its data checksum differs from card.json's; the files come from different fits")
    return tree


def load_fit_data(
    fit: Fit,
    data: str | os.PathLike[str] | ResponseData | None = None,
    *,
    hint: str = "give the fit's own data with --data",
) -> ResponseData:
    """The responses ``fit`` was made from: ``data`` when given, else the data its card records, read again as they
    were read (``info["reading"]``: the absolute path, the format and the loader's options, from any folder).

    ``data`` may be a :class:`~irtbayes.data.responses.ResponseData`, a path any :func:`irtbayes.data.io.load` reads, or a
    registered data set name; a path that is the recorded one is read with the recorded options. Its checksum must
    equal the fit's. ``hint`` ends the error messages (how to give the
    data where this is called from). A path of a graded fit's data is read as ordinal categories on the fit's own
    scale (:meth:`~irtbayes.fitting.result.Fit.category_labels`).

    Raises
    ------
    FitError
        The recorded source is not found, or the data is not what the fit was made from.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> from irtbayes.data.simulate import simulate_responses
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.fitting.storage import load_fit_data
    >>> load_fit_data(fit, data) is data  # the data's checksum is the fit's
    True
    >>> other, _ = simulate_responses(100, 40, missing=0.0, seed=9)
    >>> load_fit_data(fit, other)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.FitError: simulated 2pl (100 subjects x 40 items): these are not the data the fit was made from (checksum 3c9577f08d85, the fit's 868eb8ba7ce5); give the fit's own data with --data
    """
    from irtbayes.data import io
    from irtbayes.data import registry as datasets

    reading = fit.info.get("reading")
    if isinstance(data, ResponseData):
        loaded = data
    elif reading and (data is None or Path(data).resolve() == Path(reading["path"])):
        try:
            loaded = io.reread(reading)
        except DataError as err:
            raise FitError(f"{err}; {hint}") from None
    else:
        source = str(data) if data is not None else str(fit.info.get("source") or "")
        if source and Path(source).exists():
            loaded = io.load(source, **fit.read_options())
        elif source and source in datasets.list_datasets().index:
            loaded = datasets.load_dataset(source)
        elif data is not None:
            raise DataError(f"{source}: no such file or folder, and not a registered data set")
        else:
            raise FitError(f"the data the fit was made from ({source or 'not recorded'}) is not here; {hint}")
    fit.check_data(loaded, hint=hint)
    return loaded
