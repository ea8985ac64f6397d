"""The audit of a whole release record: every field a release publishes, not only the mechanism's output.

A release record has three parts (:mod:`dpsurv_core.publication`): ``released`` (the mechanism's noisy output),
``public_inputs`` (declared values) and ``derived`` (bands, medians, landmarks, tests, intervals and warnings, computed
by a reader). A leak can sit in any of them: an interval computed from the exact number of subjects tells D from D'
however well the mechanism hides the target. So the audit makes, on D and on D', the record a release would make
(:class:`Publisher`: draw one run with seeded simulation noise, exactly as a release draws it, then publish it: the
registered reader on the drawn output and the same public inputs) and attacks the whole record.

Every record is flattened into one vector of features (:func:`features`), named by the path of their field as
:func:`~dpsurv_core.publication.first_difference` names it (``derived.medians[0].median_lower``):

* each number (booleans as 0/1); a null, or a field absent from some records, also gives ``PATH is null`` (0/1);
* each text at a fixed place gives ``PATH = "text"`` (0/1);
* a list of texts (warnings) gives, for each distinct text, ``PATH has "text"`` (0/1), for each distinct text with
  its numbers masked, ``PATH has a text like "... # ..."`` (0/1: the warning's presence whatever numbers it quotes),
  and its length.

The distinguishing test is :func:`~dpsurv_core.audit.attack.distinguish` on those vectors: per-field and per-part
(released, derived, texts) Laplace and Gaussian likelihood ratios, the fields whose means differ most and the best
single fields, fitted and chosen on the first half of each data set's runs, the empirical epsilon lower bound
(Clopper-Pearson) and the strongest attack measured on the second half. An attacker who knows everyone else knows
where the target would show: when the publisher can draw with the noise off (:attr:`Publisher.exact`), the fields in
which the noiseless records of D and D' differ (the target's footprint, released and derived) are scored as sets of
their own, as the output attack scores the target's cells.

Two checks need no statistics. A record maker that reads the data set it ran on (``publish_on``: intervals simulated
at the exact n) makes a record that is a deterministic function of the released part and that data set; an attacker
who knows everyone else re-makes it both ways from its released part and sees which one it is (the columns
``record re-made as on D`` and ``... as on D'``). And every record must re-derive from its own released part and
public inputs (``budget rederive``): ``rederives`` is False when the first record of either data set does not (its
derived part depends on something else, such as the data). A reader is slower than the mechanism's
vectorised draws (bootstraps, calibrated tests, simulated intervals), so a record attack runs fewer runs by default
(:data:`RECORD_TRIALS`, or the publisher's own) and says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsurv_core.audit.attack import Attack, distinguish
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.privacy.noise import NoiseSource, SimulationNoise
from dpsurv_core.publication import jsonable
from dpsurv_core.publication import publish as publish_record
from dpsurv_core.publication.record import canonical

RECORD_TRIALS = 200  # default runs per data set of a record attack (a reader per run; curves: about 10 to 30 ms each)
PARTS = ("released", "public_inputs", "derived")
Record = dict[str, Any]
Publish = Callable[[dict[str, Any]], Record]
Draw = Callable[[Cohort, NoiseSource], dict[str, Any]]
Progress = Callable[[float], None]


class AuditNoise(SimulationNoise):
    """Seeded simulation noise that describes itself the same way on D and on D'. A release records the description
    of its noise source; the two simulation streams differ in their seeds, and an attack must not tell the data sets
    apart by the seed written into the record (a release's description is one fixed sentence)."""

    def describe(self) -> str:
        return "simulation (privacy audit): numpy Generator, seeded; not for publication"


@dataclass
class Publisher:
    """How a release of one analysis makes its record, for the audit to make it again on D and on D'.

    ``draw(cohort, noise)``: one run's noisy output, as a release draws it (one trial); ``publish(released)``: the
    record (a dict with ``released``, ``public_inputs`` and ``derived``) the release would keep, the same on D and on
    D' (a reader sees no data). ``publish_on(cohort)``, when given, replaces ``publish`` by a record maker of the data
    set the run drew from: a record built as an older release built it (intervals from the exact n), which the
    audit must be able to attack too. ``trials``: this publisher's default runs per data set."""

    draw: Draw
    publish: Publish
    kind: str = ""
    trials: int = RECORD_TRIALS
    source: str = ""
    publish_on: Callable[[Cohort], Publish] | None = None
    exact: Draw | None = None  # the same draw with the noise off (epsilon inf): only to find the target's footprint
    json_ready: bool = False  # ``publish`` returns JSON normal form already (a registered reader's record does)
    public_inputs: dict[str, Any] | None = None  # a reader publisher's public inputs (the same on D and D')

    def maker(self, cohort: Cohort) -> Publish:
        return self.publish if self.publish_on is None else self.publish_on(cohort)


def reader_publisher(kind: str, draw: Draw, public_inputs: dict[str, Any], trials: int = RECORD_TRIALS,
                     source: str = "", exact: Draw | None = None) -> Publisher:
    """A publisher whose record is what a release records: the ``kind`` reader
    (:func:`dpsurv_core.publication.publish`) on each drawn output with these ``public_inputs``."""
    inputs = jsonable(public_inputs)
    return Publisher(draw, lambda released: publish_record(kind, released, inputs).to_dict(), kind, trials, source,
                     exact=exact, json_ready=True, public_inputs=inputs)


# ------------------------------------------------------------------------------------------- features
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?%?")


def template(text: str) -> str:
    """``text`` with its numbers masked as ``#``: the same warning whatever numbers it quotes."""
    return _NUMBER.sub("#", text)


def _walk(value: Any, path: str, numbers: dict[str, float], flags: dict[str, None]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _walk(v, f"{path}.{k}" if path else str(k), numbers, flags)
    elif isinstance(value, list):
        if not value or all(isinstance(v, (str, dict)) for v in value):
            numbers[f"{path} length"] = float(len(value))
        if value and all(isinstance(v, str) for v in value):  # a set of texts: warnings, notes, group names
            for s in value:
                flags[f"{path} has {json.dumps(s)}"] = None
                t = template(s)
                if t != s:
                    flags[f"{path} has a text like {json.dumps(t)}"] = None
            return
        for i, v in enumerate(value):
            _walk(v, f"{path}[{i}]", numbers, flags)
    elif isinstance(value, bool):
        numbers[path] = float(value)
    elif isinstance(value, (int, float)):
        numbers[path] = float(value)
    elif value is None:
        numbers[path] = float("nan")
    elif isinstance(value, str):
        flags[f"{path} = {json.dumps(value)}"] = None
    else:  # not JSON: its text
        flags[f"{path} = {json.dumps(str(value))}"] = None


def features(record: Record) -> tuple[dict[str, float], dict[str, None]]:
    """The numbers (by field path, NaN for null) and the 0/1 features present (an ordered set of names) of one
    record's ``released``, ``public_inputs`` and ``derived`` (a record in JSON normal form: :func:`records` makes
    them so)."""
    numbers: dict[str, float] = {}
    flags: dict[str, None] = {}
    for part in PARTS:
        if part in record:
            _walk(record[part], part, numbers, flags)
    return numbers, flags


@dataclass
class FeatureTable:
    """The records of both data sets as one matrix (runs, fields), with each column's name."""

    matrix: np.ndarray
    names: list[str]
    flag: np.ndarray  # bool per column: a 0/1 feature (text, null) rather than a number

    def part(self, prefix: str, flags: bool | None = None) -> np.ndarray:
        idx = [i for i, n in enumerate(self.names) if n.startswith(prefix) and (flags is None or self.flag[i] == flags)]
        return np.asarray(idx, dtype=np.int64)


def feature_table(records: Sequence[Record]) -> FeatureTable:
    """Every record's features on the union of their fields (numbers first, in record order, then the 0/1
    features): a number absent from a record is NaN there, and a number that is null or absent somewhere gets its
    ``PATH is null`` column too."""
    rows = [features(r) for r in records]
    num_names: dict[str, None] = {}
    flag_names: dict[str, None] = {}
    for numbers, flags in rows:
        num_names.update(dict.fromkeys(numbers))
        flag_names.update(flags)
    nums = list(num_names)
    col = {n: j for j, n in enumerate(nums)}
    values = np.full((len(rows), len(nums)), np.nan)
    for i, (numbers, _) in enumerate(rows):
        for n, v in numbers.items():
            values[i, col[n]] = v
    nulls = np.isnan(values)
    null_cols = np.flatnonzero(nulls.any(axis=0))
    flag_list = [f"{nums[j]} is null" for j in null_cols] + list(flag_names)
    fcol = {n: j for j, n in enumerate(flag_names)}
    flag_values = np.zeros((len(rows), len(flag_names)))
    for i, (_, flags) in enumerate(rows):
        for n in flags:
            flag_values[i, fcol[n]] = 1.0
    matrix = np.hstack([values, nulls[:, null_cols].astype(float), flag_values])
    is_flag = np.concatenate([np.zeros(len(nums), bool), np.ones(len(flag_list), bool)])
    return FeatureTable(matrix, nums + flag_list, is_flag)


# ------------------------------------------------------------------------------------------- the attack
@dataclass
class RecordAudit:
    """The attack on the whole record: the test measured on the held-out runs (``attack``), the fields it scored,
    how many of them varied between runs, and the fields whose values on D and on D' never overlapped."""

    attack: Attack
    fields: list[str]
    trials: int
    kind: str = ""
    source: str = ""
    varying: int = 0
    separating: list[str] = field(default_factory=list)
    rederives: bool | None = None  # the records re-derive from their released part and public inputs

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "trials": self.trials, "held_out_runs": self.attack.runs,
                "attacked_fields": list(self.fields), "attacked_fields_count": len(self.fields),
                "varying_fields_count": self.varying, "separating_fields": list(self.separating),
                "source": self.source, "rederives": self.rederives}


def separating_fields(x_in: np.ndarray, x_out: np.ndarray, names: Sequence[str], limit: int = 50) -> list[str]:
    """The fields whose values in every run on D lie on one side of their values in every run on D' (null counted
    as its own value): what the runs never confused. With noise such a field is rare; a field read off the exact
    data (n, a share) is one."""
    a = np.nan_to_num(x_in, nan=-np.inf)
    b = np.nan_to_num(x_out, nan=-np.inf)
    apart = (a.max(0) < b.min(0)) | (b.max(0) < a.min(0))
    return [names[j] for j in np.flatnonzero(apart)[:limit]]


def _attack_records(records_in: Sequence[Record], records_out: Sequence[Record], kind: str = "", source: str = "",
                   footprint: Sequence[str] = (), extra: dict[str, np.ndarray] | None = None) -> RecordAudit:
    """The distinguishing test on records made on D (``records_in``) and on D' (``records_out``), in run order
    (the first half of each fits the test, the second half measures it). ``footprint``: the field names the target
    moves (:func:`footprint`), scored as sets of their own; ``extra``: more columns by name, one value per record
    (those on D first), such as :func:`_remade`'s."""
    table = feature_table([*records_in, *records_out])
    if extra:
        cols = [np.asarray(v, dtype=float).reshape(-1, 1) for v in extra.values()]
        table = FeatureTable(np.hstack([table.matrix, *cols]), [*table.names, *extra],
                             np.concatenate([table.flag, np.ones(len(cols), bool)]))
    x = table.matrix
    x_in, x_out = x[: len(records_in)], x[len(records_in):]
    with np.errstate(invalid="ignore"):
        both = np.nan_to_num(x, nan=0.0)
        varying = np.flatnonzero(np.any(both != both[:1], axis=0))
    names = [table.names[j] for j in varying]
    where = {j: i for i, j in enumerate(varying)}

    def focus(idx: np.ndarray) -> np.ndarray:
        return np.asarray([where[j] for j in idx if j in where], dtype=np.int64)

    sets = {"released": focus(table.part("released", False)), "derived": focus(table.part("derived", False)),
            "public inputs": focus(table.part("public_inputs", False)),
            "texts and nulls": focus(np.flatnonzero(table.flag)),
            "re-made records": focus(np.arange(len(table.names) - len(extra or {}), len(table.names)))}
    moved = set(footprint)
    for part, label in (("released", "released fields the target moves"), ("derived", "derived fields the target moves")):
        sets[label] = focus(np.asarray([j for j, n in enumerate(table.names) if n in moved and n.startswith(part)],
                                       dtype=np.int64))
    sets = {k: v for k, v in sets.items() if v.size}
    if varying.size == 0:  # every record alike: nothing to attack (a coin toss)
        x_in_v, x_out_v, names = np.zeros((len(records_in), 1)), np.zeros((len(records_out), 1)), ["(no field varied)"]
    else:
        x_in_v, x_out_v = x_in[:, varying], x_out[:, varying]
    att = distinguish(x_in_v, x_out_v, sets, names=names)
    return RecordAudit(att, list(table.names), min(len(records_in), len(records_out)), kind, source,
                       int(varying.size), separating_fields(x_in, x_out, table.names))


def records(publisher: Publisher, cohort: Cohort, noise: NoiseSource, trials: int,
            progress: Progress | None = None) -> list[Record]:
    """``trials`` records made on ``cohort`` as a release makes one: draw one run, then publish it (the record in
    JSON normal form: a reader's record already is, a custom publish's is made so)."""
    publish = publisher.maker(cohort)
    out: list[Record] = []
    for r in range(int(trials)):
        out.append(publish(publisher.draw(cohort, noise)))
        if not publisher.json_ready:
            out[-1] = jsonable(out[-1])
        if progress is not None:
            progress((r + 1) / trials)
    return out


def footprint(publisher: Publisher, cohort_in: Cohort, cohort_out: Cohort) -> list[str]:
    """The fields in which the records made with the noise off on D and on D' differ: where the target shows,
    known to an attacker who knows everyone else (empty when the publisher cannot switch its noise off, or its
    reader cannot read a noiseless output)."""
    if publisher.exact is None:
        return []
    try:
        pair = [jsonable(publisher.maker(c)(publisher.exact(c, AuditNoise(0)))) for c in (cohort_in, cohort_out)]
    except (ArithmeticError, ValueError, TypeError, KeyError, IndexError):
        return []
    table = feature_table(pair)
    with np.errstate(invalid="ignore"):
        a, b = table.matrix
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    return [table.names[j] for j in np.flatnonzero(differ)]


def record_noises(seed: int) -> tuple[AuditNoise, AuditNoise]:
    """The record runs' two noise streams: spawned from the audit's seed beside (and independent of) the streams of
    the mechanism's own runs (:func:`dpsurv_core.audit.adapters._noises` takes the first two children)."""
    children = np.random.SeedSequence(int(seed)).spawn(4)
    return AuditNoise(children[2]), AuditNoise(children[3])


def _same(a: Record, b: Record) -> bool:
    return canonical(a) == canonical(b)


def _remade(publisher: Publisher, cohort_in: Cohort, cohort_out: Cohort, recs: Sequence[Record]
           ) -> dict[str, np.ndarray]:
    """For a record maker that reads the data set it ran on (``publish_on``): whether each record is the one made
    from its released part on D, and on D' (1/0), as an attacker who knows everyone else can check. Empty when the
    maker is the same on both (a reader reads no data)."""
    if publisher.publish_on is None:
        return {}
    out: dict[str, np.ndarray] = {}
    for label, cohort in (("D", cohort_in), ("D'", cohort_out)):
        make = publisher.maker(cohort)
        out[f"record re-made as on {label} (from its released part)"] = np.array(
            [float(_same(jsonable(make(r["released"])), r)) for r in recs])
    return out


def rederives(publisher: Publisher, recs: Sequence[Record]) -> bool:
    """Whether these records re-derive from their released part and public inputs alone (the declared ``publish``,
    as ``budget rederive`` recomputes a stored record)."""
    return all(_same(jsonable(publisher.publish(r["released"])), r) for r in recs)


def record_audit(publisher: Publisher, cohort_in: Cohort, cohort_out: Cohort, trials: int, seed: int,
                 progress: Progress | None = None) -> RecordAudit:
    """Records on D (``cohort_in``) and on D' (``cohort_out``), ``trials`` each with seeded noise, and the attack
    on them (with :func:`_remade`'s columns), and whether the first record of each re-derives.

    Parameters
    ----------
    publisher : Publisher
        Makes a release's whole record from a cohort and noise.
    cohort_in, cohort_out : Cohort
        D and its neighbour D'.
    trials : int
        Records per data set.
    seed : int
        Seed of the simulation noise.
    progress : callable, optional
        Called with ``(share done, sentence)``.

    Returns
    -------
    RecordAudit
        The attack on the records and whether they re-derive.
    """
    n_in, n_out = record_noises(seed)

    def tick(start: float) -> Progress | None:
        return None if progress is None else (lambda f: progress(start + 0.5 * f))

    a = records(publisher, cohort_in, n_in, trials, tick(0.0))
    b = records(publisher, cohort_out, n_out, trials, tick(0.5))
    out = _attack_records(a, b, publisher.kind, publisher.source, footprint(publisher, cohort_in, cohort_out),
                         _remade(publisher, cohort_in, cohort_out, [*a, *b]))
    out.rederives = rederives(publisher, [a[0], b[0]])
    return out


def stored_publisher(body: dict[str, Any], trials: int = RECORD_TRIALS) -> Publisher | None:
    """The publisher of a stored curve release record (reader ``curves`` or ``logrank``): its mechanism, rebuilt from
    the record's public inputs (:func:`dpsurv_core.curves.readout.mechanism_of`), draws each run as the release drew
    it, and the record's reader reads it with the record's own public inputs; so the audit attacks the record that
    release makes, at the epsilon it was released at. None for any other record."""
    inputs = body.get("public_inputs")
    if body.get("kind") not in ("curves", "logrank") or not isinstance(inputs, dict):
        return None
    import math

    from dpsurv_core.curves import readout
    from dpsurv_core.privacy import catalogue

    inputs = {**inputs, "reader_version": readout.reader_version(inputs)}  # read by the rules it was published with
    mech = readout.mechanism_of(inputs)
    public = readout.public_parameters(inputs)
    formal = catalogue.get(catalogue.CURVES, inputs["mechanism"]).formal
    noiseless = readout.mechanism_of({**inputs, "epsilon": math.inf}) if formal else mech
    return reader_publisher(body["kind"], lambda c, noise: mech.draw(c, public, noise, 1, False), inputs, trials,
                            source="the ledger record's own reader and public inputs, its mechanism rebuilt from them",
                            exact=lambda c, noise: noiseless.draw(c, public, noise, 1, False))
