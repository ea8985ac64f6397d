"""Readers: the only code that turns a release's noisy output into what people read.

A reader is ``read(released, public_inputs) -> derived``: two JSON dicts in, one JSON dict out. It lives beside its
family (``dpsurv_core/curves/readout.py`` and so on) and is named here by import path, so this layer imports no family
and a family's reader imports nothing that reads data (a test walks their imports). ``publish`` runs the reader at
release time; ``rederive`` runs it again on a stored record, with no data in reach, and compares.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import Any

from dpsurv_core.errors import ParameterError, stored_version
from dpsurv_core.publication.record import Publication, first_difference, jsonable

Reader = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

READERS: dict[str, str] = {
    "curves": "dpsurv_core.curves.readout:read",
    "logrank": "dpsurv_core.curves.logrank_readout:read",
    "weibull": "dpsurv_core.weibull.readout:read",
    "regression": "dpsurv_core.regression.readout:read",
}


def _module(kind: str) -> tuple[Any, str]:
    try:
        module, name = READERS[kind].split(":")
    except KeyError:
        raise ParameterError(f"No reader for records of kind {kind!r}: this version of dpsurv reads "
                             f"{', '.join(sorted(READERS))}.") from None
    return importlib.import_module(module), name


def reader(kind: str) -> Reader:
    """The reader registered for ``kind``."""
    module, name = _module(kind)
    return getattr(module, name)


def reader_version(kind: str) -> int:
    """The version of the ``kind`` reader's rules (its module's ``VERSION``, 1 where it has none). A release stores it
    in ``public_inputs["reader_version"]`` and is read again by the rules of that version, so a record keeps
    re-deriving after a reader's rule changes; a record without one was made by version 1."""
    return int(getattr(_module(kind)[0], "VERSION", 1))


def derive(kind: str, released: dict[str, Any], public_inputs: dict[str, Any]) -> dict[str, Any]:
    """``derived`` of a release: the ``kind`` reader on copies of the two parts in JSON normal form (so nothing it
    does can change what is stored), its answer in the same form.

    Parameters
    ----------
    kind : str
        The release's kind (its reader: ``curves``, ``logrank``, ``weibull``, ``regression``, ...).
    released : dict
        The mechanism's noisy output.
    public_inputs : dict
        The declared values it used.

    Returns
    -------
    dict
        The release's ``derived`` part, in JSON normal form.

    References
    ----------
    .. [1] Dwork C. & Roth A. (2014), The Algorithmic Foundations of Differential Privacy, Proposition 2.1
       (post-processing).
    """
    stored_version(public_inputs, reader_version(kind), f"{kind} reader")
    return jsonable(reader(kind)(copy.deepcopy(jsonable(released)), copy.deepcopy(jsonable(public_inputs))))


def publish(kind: str, released: dict[str, Any], public_inputs: dict[str, Any]) -> Publication:
    """The three parts of a release record, ``derived`` computed by the ``kind`` reader.

    Parameters
    ----------
    kind : str
        The release's kind (its reader).
    released : dict
        The mechanism's noisy output.
    public_inputs : dict
        The declared values it used; ``reader_version`` is the reader's current version unless they name one (a
        stored record published again, as its audit does, is read by the rules it was published with).

    Returns
    -------
    Publication
        ``released``, ``public_inputs`` and ``derived``.
    """
    rel, pub = jsonable(released), jsonable(public_inputs)
    pub = {"reader_version": reader_version(kind), **pub}  # a stored record's inputs keep the version they name
    return Publication(kind, rel, pub, derive(kind, rel, pub))


def rederive(body: dict[str, Any]) -> dict[str, Any]:
    """Recompute a stored release record's ``derived`` from its ``released`` and ``public_inputs`` alone.

    Returns ``{"identical": bool, "first_difference": path or None, "kind": ...}``: identical means every text,
    integer and flag equal and every float within the last bits' rounding of another processor
    (:data:`~dpsurv_core.publication.record.REL_TOL`); a record made before records had three parts cannot be
    re-derived (``ParameterError``).

    Parameters
    ----------
    body : dict
        A stored release record's body.

    Returns
    -------
    dict
        ``identical``, ``first_difference`` and ``kind``.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        For a record made before records had three parts.
    """
    if not all(k in body for k in ("kind", "released", "public_inputs", "derived")):
        raise ParameterError("This record predates three-part release records (released, public inputs, derived), "
                             "so there is nothing to re-derive it from.")
    again = derive(body["kind"], body["released"], body["public_inputs"])
    diff = first_difference(body["derived"], again)
    return {"identical": diff is None, "first_difference": None if diff is None else f"derived.{diff}",
            "kind": body["kind"]}
