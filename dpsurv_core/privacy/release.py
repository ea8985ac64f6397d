"""The release protocol: the only road from private data to a published number.

    plan (mechanism, public parameters, epsilon)
      -> cost, computed by the mechanism object from its parameters
      -> atomic check against the data set's budget (the ledger database's write lock is taken here; the hash
         chain is walked first, and a broken chain refuses the release)
      -> noise drawn from the release source (OpenDP samplers / OS entropy; never a seed)
      -> charge recorded (hash-chained), in the same transaction as the check
      -> result, with its record id

A refused release computes nothing: the check comes before ``compute`` is called. Previews and
simulations run the same ``compute`` with seeded simulation noise and never touch the ledger; their
results say so (``simulation: true``) and must not be published.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.ledger import NO_CAP, Ledger, LedgerEntry, LedgerStore, PrivacyCost, charged_sentence
from dpsurv_core.privacy.mechanism import Mechanism
from dpsurv_core.privacy.noise import NoiseSource, ReleaseNoise, SimulationNoise
from dpsurv_core.publication import Publication, enforce, publish

PREVIEW_LABEL = "preview, not for publication"
SIMULATION_SENTENCE = ("simulation with seeded noise: not a private release, never recorded in the ledger, not for "
                       "publication")
NOT_PRIVATE_SENTENCE = "no noise: not private (for the data holder's eyes only, never a release)"


@dataclass
class Plan:
    """What one release would do: the mechanism (which knows its cost), the data set it reads (by fingerprint)
    and ``compute(noise, trials)``, which draws the noise and returns the private result."""

    entry: Entry
    mechanism: Mechanism
    dataset: str
    fingerprint: str
    compute: Callable[[NoiseSource, int], Any]
    disclosures: Sequence[Any] = ()
    command: str = ""  # the CLI command line that runs this plan again (a new, charged release)
    parallel_key: str | None = None
    note: str = ""
    analysis: str | None = None  # ledger label; default the mechanism's
    kind: str | None = None  # the reader of the record (dpsurv_core.publication.readers)
    publish: Callable[[Any], tuple[dict[str, Any], dict[str, Any]]] | None = None  # result -> (released, public)
    accept: tuple[str, ...] = ()  # values read off the data that the data holder accepted to publish (not DP)

    @property
    def cost(self):
        return self.mechanism.cost

    @property
    def private(self) -> bool:
        eps = self.cost.epsilon  # None: disclosure control, released like any other but with no formal guarantee
        return self.entry.private and (eps is None or math.isfinite(eps))

    def publication(self, result: Any) -> Publication:
        """The record's three parts: the plan's ``publish`` splits the result into its noisy output and the declared
        values, and the ``kind`` reader derives everything people read from those two alone."""
        if self.publish is None or self.kind is None:
            raise ParameterError(f"{self.entry.id} has no publication reader, so its release could not be recomputed "
                                 "from its record: it cannot be released.")
        released, public_inputs = self.publish(result)
        return publish(self.kind, released, public_inputs)

    def ledger_entry(self) -> LedgerEntry:
        entry = self.mechanism.ledger_entry(self.dataset, self.parallel_key, self.note, self.disclosures)
        if self.analysis:
            entry.analysis = self.analysis
        entry.command = self.command
        return entry


@dataclass
class Released:
    """A published release: its result, record id, ledger line and the data set's ledger after it."""

    result: Any
    record_id: int
    entry: LedgerEntry
    ledger: Ledger
    warnings: list[str] = field(default_factory=list)
    publication: Publication | None = None

    def summary(self) -> dict[str, Any]:
        """JSON fields every release prints."""
        cost = self.entry.cost
        out: dict[str, Any] = {"release": True, "simulation": False, "record_id": self.record_id, "epsilon_spent": cost.epsilon,
               "delta": cost.delta, "protects": cost.protects, "neighbouring": cost.neighbouring,
               "guarantee": cost.guarantee, "cap": self.ledger.cap, "spent": self.ledger.spent(cost.protects),
               "budget": self.ledger.cap_sentence}
        if self.publication is not None:
            out["publishable"] = self.publishable()
        if not cost.formal:  # no epsilon: nothing spent, nothing composed, and the JSON says so (null, never 0)
            out.update({"spent": None, "formal_guarantee": False,
                        "budget": "no formal guarantee: this release has no epsilon and is not counted against the cap; "
                                  "the ledger records it as a disclosure-control release"})
        return out

    def publishable(self) -> dict[str, Any]:
        """Exactly what the ledger record holds for people outside: its three parts, the cost and the record id."""
        pub = self.publication
        assert pub is not None
        run = self.entry.as_run()
        return {"record_id": self.record_id, "kind": pub.kind, "released": pub.released,
                "public_inputs": pub.public_inputs, "derived": pub.derived,
                "cost": {"epsilon": self.entry.cost.epsilon, "delta": self.entry.cost.delta,
                         "protects": self.entry.cost.protects, "neighbouring": self.entry.cost.neighbouring},
                "guarantee": run["guarantee"], "privacy": run["sentence"],
                "subject_protected": run["subject_protected"], "disclosures": run["disclosures"]}


def stored_release(record: Any, ledger: Ledger) -> Released:
    """A release already in the ledger (``record``: a release record with three parts), as :class:`Released`: no
    result in memory, its publication read back from the record, so that what is shown of it is read off the record
    alone (:mod:`dpsurv_core.publication.reading`). Reading it again draws and charges nothing.

    Parameters
    ----------
    record : Record
        The ledger record.
    ledger : Ledger
        The ledger it is in.

    Returns
    -------
    Released
        The release, with its publication and no result in memory.
    """
    from dpsurv_core.privacy.ledger import entry_from_body

    body = record.body
    publication = Publication(body["kind"], body["released"], body["public_inputs"], body["derived"])
    return Released(None, record.id, entry_from_body(body, record.id, record.time), ledger, [], publication)


def uncertainty_sentence(plan: Plan) -> str:
    """What the intervals and tests beside this plan's private numbers account for, in one plain sentence."""
    tests = getattr(plan, "analysis", None) == "log-rank tests"
    if not getattr(plan.entry, "formal", True):
        if tests:
            return ("Statistical disclosure control: the p-values are calibrated by simulating the method's own rule "
                    "under no difference, but no formal guarantee protects the patients.")
        if getattr(plan.entry, "interval_includes_noise", False):
            return ("Statistical disclosure control: the intervals beside these numbers come from a parametric "
                    "bootstrap through the method's own random rounding or perturbation, so they carry it; no formal "
                    "guarantee protects the patients.")
        return ("Statistical disclosure control: the intervals beside these numbers are sampling intervals from the "
                "altered counts; they do not account for the suppression, rounding or perturbation, and no formal "
                "guarantee protects the patients.")
    if tests and plan.private and plan.entry.id == "rrr":
        return ("Randomized response: the tests on the reported groups need no calibration (labels swapped at random "
                "leave the statistic's null distribution unchanged); the tests on the de-biased counts are calibrated "
                "by simulating the label swaps, so both keep their 5% level.")
    if tests and plan.private:
        return ("The private p-values are calibrated for the noise: each statistic is compared with its null "
                "distribution simulated with the public noise law, so a test keeps its 5% level.")
    if not plan.private:
        return "No noise: these numbers are exact, and their intervals are the usual sampling intervals."
    if plan.entry.interval_includes_noise and not getattr(getattr(plan, "mechanism", None), "interval_covers_sampling", True):
        return ("The band beside the private curve carries the privacy noise (it inverts the mechanism's noise and "
                "smoothing) but not the sampling error, which this mechanism's release cannot show: with few subjects "
                "the true uncertainty is larger still.")
    if plan.entry.interval_includes_noise:
        return ("The intervals beside the private numbers carry the privacy noise as well as the sampling error "
                "(computed from the release and the public noise law), so they are honest about the noise.")
    return ("The intervals and p-values beside the private numbers here account for sampling only, not for the privacy "
            "noise, so they are too narrow: treat the private numbers as less certain than they look, and compare "
            "several previews to see how much the noise moves them.")


def release(plan: Plan, store: LedgerStore, noise: Callable[[], NoiseSource] = ReleaseNoise,
            cap: float | None = None) -> Released:
    """Run ``plan`` as a release: check, draw, charge, atomically. Before any noise is drawn, inside the ledger's write
    lock: the hash chain is walked (``ChainBrokenError`` when it is broken), ``cap`` (``--cap``) sets the cap of a
    data set that has none and refuses one that differs from the cap it has (``ParameterError``), and the cost is
    checked against the cap (``BudgetExceededError``). A refused release computes nothing and records nothing, not
    even the cap ``cap`` would have set."""
    if not plan.private:
        raise ParameterError(f"{plan.entry.name} adds no noise, so it is not a release: its numbers are for the data "
                             "holder's eyes only. Choose a private mechanism and a finite epsilon to release.")
    if not plan.cost.formal and not plan.fingerprint:
        raise ParameterError(f"{plan.entry.id} is disclosure control and has no epsilon, so --epsilon inf does not switch "
                             "anything off: drop --epsilon to release it (recorded in the ledger), or add --seed to "
                             "preview it.")
    # declared or refused, before any noise: a value read off the data leaves only when a person accepted it
    plan = replace(plan, disclosures=enforce(plan.disclosures, plan.accept))
    entry = plan.ledger_entry()
    with store.transaction(plan.fingerprint) as tx:
        tx.check_chain()  # a broken chain: its totals cannot be trusted, so nothing is built on it
        cap_set_now = tx.use_cap(cap, plan.dataset)
        try:
            tx.check(entry)  # before any noise is drawn or any private number computed
        except BudgetExceededError as exc:
            if not cap_set_now:
                raise
            raise BudgetExceededError(f"{exc} Nothing was recorded, not even the cap {cap:.4g} that --cap would "
                                      "have set.") from None
        result = plan.compute(noise(), 1)
        publication = plan.publication(result)
        rid = tx.charge(entry, publication=publication)
        ledger = tx.ledger
    return Released(result, rid, entry, ledger, [] if ledger.cap is not None else [NO_CAP], publication)


def preview(plan: Plan, seed: int, trials: int = 1) -> Any:
    """The same computation with seeded simulation noise: costs nothing, recorded nowhere, never exported.

    Parameters
    ----------
    plan : Plan
        The release's plan.
    seed : int
        Seed of the simulation noise.
    trials : int, default 1
        Draws computed at once.

    Returns
    -------
    object
        What ``plan.compute`` returns, from simulation noise (not for publication).
    """
    return plan.compute(SimulationNoise(seed), trials)


PREVIEW_SPREAD_DRAWS = 20


def preview_spread(values: Any) -> tuple[float, float, float]:
    """(10th percentile, median, 90th percentile) of a number over preview draws (seeded simulation noise): how much
    the noise alone moves it, for the data holder's eyes (never released)."""
    import numpy as np

    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    p10, med, p90 = np.percentile(v, [10, 50, 90])
    return float(p10), float(med), float(p90)


def simulation_fields(seed: int | None, trials: int) -> dict[str, Any]:
    return {"release": False, "simulation": True, "seed": seed, "trials": trials, "privacy_note": SIMULATION_SENTENCE}


def not_private_fields() -> dict[str, Any]:
    return {"release": False, "simulation": False, "privacy_note": NOT_PRIVATE_SENTENCE}


def charge_phrase(cost: PrivacyCost, released: bool = False, disclosures: Any = ()) -> str:
    """What a release charges, as a clause: "would charge epsilon = 1, ..." (``released``: "charged to this data set's
    ledger: ..."); a disclosure-control release charges no epsilon and is only recorded; one with a disclosure that
    is not DP is charged but guarantees nothing (:func:`~dpsurv_core.privacy.ledger.charged_sentence`)."""
    if cost.formal:
        return (("charged to this data set's ledger: " if released else "would charge ")
                + charged_sentence(cost, disclosures))
    return ("recorded in this data set's ledger, charging no epsilon: " if released
            else "would be recorded, charging no epsilon: ") + cost.sentence()


def option_text(value: Any, short: bool = False) -> str:
    """One option value as it is typed on the command line.

    Parameters
    ----------
    value : object
        A bool (``true``/``false``), a float (full precision, ``inf`` for positive infinity), a list or tuple
        (its items comma-joined, floats in full precision) or anything else (``str``).
    short : bool, default False
        Write a float with ``format(value, "g")`` (six significant digits, as the app's reproduce commands have
        always been written: ``0.5``, ``1``, ``1100``) where that reads back as the same float, else in full
        precision (``0.1234567``, not ``0.123457``), so a stored command reruns the same release.

    Returns
    -------
    str
        The option's word.
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if short:
            text = f"{value:g}"
            if float(text) == value or math.isnan(value):
                return text
        return "inf" if math.isinf(value) and value > 0 else repr(float(value))
    if isinstance(value, (list, tuple)):
        return ",".join(option_text(v) for v in value)
    return str(value)


def option_words(options: Mapping[str, Any], short_floats: bool = False) -> list[str]:
    """Keyword options as command-line words: the one writer of the Python API's argv and of the app's reproduce
    commands (:func:`cli_command`).

    ``conf_type="log"`` is ``--conf-type log``; True is a bare flag; None and False are left out; a dict
    ``{column: values}`` is a repeated ``--name column:values`` (``categories`` comma-joined, ``range``
    colon-joined); other values are written by :func:`option_text`.

    Parameters
    ----------
    options : mapping of str to object
        Option names (underscores for dashes) to values, in command-line order.
    short_floats : bool, default False
        Write float values with six significant digits where that is exact (:func:`option_text`'s ``short``).

    Returns
    -------
    list of str
        The words, unquoted (an argv).

    Examples
    --------
    >>> option_words({"data": "lung", "epsilon": 0.5, "conf_type": "log-log", "json": True, "seed": None})
    ['--data', 'lung', '--epsilon', '0.5', '--conf-type', 'log-log', '--json']
    >>> option_words({"range": {"age": (40, 80)}})
    ['--range', 'age:40:80']
    """
    words: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, Mapping):
            for column, values in value.items():
                words += [flag, f"{column}:" + (":" if name == "range" else ",").join(option_text(v) for v in values)]
        else:
            words += [flag, option_text(value, short_floats)]
    return words


def cli_command(command: str, options: Mapping[str, Any]) -> str:
    """The command line that runs a plan again as a new, charged release, shell-quoted.

    Parameters
    ----------
    command : str
        The command (``km``, ``logrank``, ``weibull``, ``regression``).
    options : mapping of str to object
        Its options, written by :func:`option_words` with floats in six significant digits (as every stored
        record's ``command`` has been written) where those read back as the same float, else in full precision.

    Returns
    -------
    str
        ``python -m dpsurv_core COMMAND ... --json``.

    Examples
    --------
    >>> cli_command("km", {"data": "lung", "group": "sex", "mechanism": "laplace-counts", "epsilon": 1})
    'python -m dpsurv_core km --data lung --group sex --mechanism laplace-counts --epsilon 1 --json'
    """
    import shlex

    return shlex.join(["python", "-m", "dpsurv_core", command, *option_words(options, short_floats=True)]) + " --json"
