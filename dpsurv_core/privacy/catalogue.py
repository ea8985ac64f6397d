"""The mechanism catalogue: one table of every mechanism dpsurv offers, read by the CLI, the app,
the trade-off explorer, the audit and the report.

Each entry names its family (``curves``, ``weibull``, ``regression``), the commands it serves, its
source, what it protects under which neighbouring relation, where a release's noise comes from, and
a factory that builds the mechanism object from its parameters. The object computes its own cost
(``Mechanism.cost``); :meth:`Entry.cost` is that cost for given parameters, so no caller types an
epsilon in. Ids are unique within a family (``nonprivate`` is both the exact curves and the exact
regression fit).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import (
    ADD_REMOVE,
    CHANGE_LABEL,
    DISCLOSURE_CONTROL,
    GROUP_LABEL,
    NO_FORMAL,
    NO_NEIGHBOURS,
    SUBJECT,
    PrivacyCost,
)
from dpsurv_core.privacy.mechanism import Mechanism

CURVES, WEIBULL, REGRESSION = "curves", "weibull", "regression"
FAMILIES = (CURVES, WEIBULL, REGRESSION)
NOTHING = "nothing (not private)"

GONDARA_WANG = "Gondara L. & Wang K. (2020), Differentially Private Survival Function Estimation"
TIME_INDEXED = ("Veeraragavan N. R., Karimireddy S. P. & Nygard J. F. (2024), A Differentially Private Kaplan-Meier "
                "Estimator for Privacy-Preserving Survival Analysis, arXiv 2412.05164")
DE_FAVERI = ("De Faveri F. L., Faggioli G., Ferro N. & Spizzo R. (2024), \"Dead or Alive, we can deny it\": "
             "a Differentially Private Approach to Survival Analysis")
NGUYEN_HUI_WEIBULL = ("Nguyen T. T. & Hui S. C. (2017), Privacy-Preserving Mechanisms for Parametric Survival "
                      "Analysis with Weibull Distribution")
NGUYEN_HUI_REGRESSION = ("Nguyen T. T. & Hui S. C. (2017), Differentially Private Regression for Discrete-Time "
                         "Survival Analysis")
DPSURV = "dpsurv's own design"
SDC_PRACTICE = "statistical disclosure control practice"
SUPPRESSION = SDC_PRACTICE + " (small-number rules of registries and national statistical offices)"
ROUNDING = SDC_PRACTICE + " (rounding to base 5 or 10)"
RANDOM_ROUNDING = SDC_PRACTICE + " (unbiased random rounding, as Statistics New Zealand's base 3)"
CELL_KEY = ("Fraser B. & Wooton J. (2005), A proposed method for confidentialising tabular output to protect against "
            "differencing; the cell key method of the ABS TableBuilder and the ONS 2021 census tables")
SMOOTHING = ("O'Keefe C. M., Sparks R. S., McAullay D. & Loong B. (2012), Confidentialising survival analysis output "
             "in a remote data access system")
NO_NOISE_SDC = "none (a deterministic rule on the exact counts)"

OPENDP_DLAP = "OpenDP discrete Laplace sampler"
OPENDP_LAP = "OpenDP Laplace sampler"
OPENDP_GAUSS = "OpenDP Gaussian sampler"
OPENDP_GUMBEL_MAX = "OpenDP Gumbel noisy max (only an index is released)"
URANDOM_CHOICE = "exact integer categorical draw on os.urandom (the output is a category: no floating-point low bits)"
URANDOM_INTEGERS = "OS-entropy integers (os.urandom) by rejection, exactly uniform"
URANDOM_UNIFORM = ("exact discrete uniform on a 2^-52 grid (an os.urandom integer below 2^52 by rejection, divided by "
                   "2^52; not a continuous uniform)")
OPENDP_GAMMA = "sum of d OpenDP Laplace draws in absolute value (|Laplace(s)| is Exponential(s), so the sum is Gamma(d, s))"


def snapped(what: str) -> str:
    """The claim that ``what`` (the released reals a mechanism names) lies on the 2^-20 grid."""
    return (f"{what} snapped to multiples of 2^-20 (Mironov 2012's defence against the rounding of the floating-point "
            "arithmetic on the draws; a fixed grid, without that paper's proof, so nothing extra is charged)")


SNAPPED = snapped("released values")
SNAPPED_COUNTS = snapped("the released counts (whole numbers unless post-processing scales them, or the noise is "
                         "continuous)")
SNAPPED_WEIBULL = snapped("the released shape and both scales (normalised and in the time unit)")
INTERNAL_INDEX = URANDOM_INTEGERS + ", used as indices that are never released"


@dataclass(frozen=True)
class Entry:
    """One mechanism: what it is, what it protects, and how to build it."""

    id: str
    name: str
    family: str
    commands: tuple[str, ...]
    paper: str
    protects: str
    neighbouring: str
    noise: str
    target: str  # "module:Class" of the mechanism (imported on first use)
    guarantee: str = "exact"
    private: bool = True
    summary: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # mechanism-specific parameters and their defaults
    audit_runs: int | None = None  # a smaller default number of audit runs for mechanisms that are slow to rerun

    @property
    def formal(self) -> bool:
        """False for statistical disclosure control: no epsilon, no formal guarantee."""
        return self.guarantee != NO_FORMAL

    @property
    def analysis(self) -> str:
        return {CURVES: "survival curves", WEIBULL: "Weibull parameters", REGRESSION: "regression"}[self.family]

    @property
    def interval_includes_noise(self) -> bool:
        """Do the intervals and tests printed beside its numbers carry the noise? (the mechanism class says)"""
        return bool(getattr(self.mechanism_class(), "interval_includes_noise", False))

    @property
    def engines(self) -> tuple[str, ...]:
        """Where its statistics can be computed (the mechanism class says)."""
        return tuple(getattr(self.mechanism_class(), "engines", ("pandas",)))

    def mechanism_class(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def build(self, epsilon: float | None = None, **params: Any) -> Mechanism:
        """The mechanism object for these parameters (its cost follows from them)."""
        return _FACTORIES[(self.family, self.id)](self, epsilon, params)

    def cost(self, epsilon: float | None = None, **params: Any) -> PrivacyCost:
        return self.build(epsilon, **params).cost

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "analysis": self.analysis, "family": self.family,
                "commands": list(self.commands), "paper": self.paper, "protects": self.protects,
                "neighbouring": self.neighbouring, "guarantee": self.guarantee, "private": self.private,
                "noise": self.noise, "engines": list(self.engines), "summary": self.summary,
                "interval_includes_noise": self.interval_includes_noise,
                "formal_guarantee": self.formal and self.private, "epsilon_applies": self.formal and self.private,
                "options": {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                            for k, v in self.options.items()}}


_SPHERE = (OPENDP_GAMMA + " (gamma radius) and " + OPENDP_GAUSS + " (normalised to a uniform direction); " + SNAPPED)
_CURVE_CMDS = ("km", "logrank", "audit", "report")

ENTRIES: tuple[Entry, ...] = (
    Entry("nonprivate", "Exact Kaplan-Meier (not private)", CURVES, _CURVE_CMDS, "Kaplan & Meier (1958); lifelines",
          NOTHING, "none", "none", "dpsurv_core.curves.result:NonPrivate", guarantee="none", private=False,
          summary="The exact estimators, equal to lifelines and R survival: for the data holder's eyes only."),
    Entry("laplace-counts", "Laplace noise on binned counts", CURVES, _CURVE_CMDS, GONDARA_WANG, SUBJECT, ADD_REMOVE,
          OPENDP_DLAP + "; " + SNAPPED_COUNTS, "dpsurv_core.curves.laplace_counts:LaplaceCounts",
          summary="Discrete Laplace noise of scale 2m/epsilon on the per-group numbers at risk, events and censorings "
                  "on public bins; every curve and test is post-processing."),
    Entry("time-indexed", "Time-indexed noise on the curve", CURVES, ("km", "audit", "report"), TIME_INDEXED, SUBJECT,
          ADD_REMOVE, OPENDP_LAP + "; " + snapped("the released curve (after clipping, smoothing and the running "
                                                  "minimum)"), "dpsurv_core.curves.time_indexed:TimeIndexed",
          summary="Laplace noise on the survival curve at each public grid point, decaying over time, then clipping, "
                  "smoothing and a monotone fix; the ledger charges the true total e n (1 + alpha (n + 1) / 2).",
          options={"alpha": 0.5, "tau_start": 1.0, "tau_end": 0.6, "window": 5, "edge_mode": "mean",
                   "base_epsilon": None, "sample_size": None, "censoring": None}),
    Entry("rrr", "Randomized response on the group label", CURVES, _CURVE_CMDS, DE_FAVERI, GROUP_LABEL, CHANGE_LABEL,
          URANDOM_CHOICE + " (keep or replace, then the replacement label); the released counts per reported label "
          "are whole numbers, so nothing is snapped", "dpsurv_core.curves.rrr:RandomizedResponse",
          summary="Each subject's group label is kept with probability p = (e^eps - 1)/(e^eps - 1 + k) and otherwise "
                  "replaced by a uniform label; times and events are published as they are (label-only protection)."),
    Entry("adaptive-km", "Adaptive Kaplan-Meier (merged bins)", CURVES, _CURVE_CMDS, DPSURV + ", building on "
          + GONDARA_WANG, SUBJECT, ADD_REMOVE, OPENDP_DLAP + "; " + SNAPPED_COUNTS,
          "dpsurv_core.curves.adaptive_km:AdaptiveKM",
          summary="One released cell per subject on public bins merged with a DP share of the budget; sensitivity m "
                  "instead of 2m."),
    Entry("suppress-small-cells", "Small-cell suppression (no formal guarantee)", CURVES, _CURVE_CMDS, SUPPRESSION,
          DISCLOSURE_CONTROL, NO_NEIGHBOURS, NO_NOISE_SDC, "dpsurv_core.disclosure.suppress_small_cells:SuppressSmallCells",
          guarantee=NO_FORMAL, summary="Counts from 1 to threshold - 1 in the numbers at risk, events and censorings are "
          "withheld and shown as \"<threshold\"; a suppressed step holds the curve flat. No epsilon.",
          options={"threshold": 5}),
    Entry("round", "Rounding to base 5 (no formal guarantee)", CURVES, _CURVE_CMDS, ROUNDING, DISCLOSURE_CONTROL,
          NO_NEIGHBOURS, NO_NOISE_SDC, "dpsurv_core.disclosure.rounding:Round", guarantee=NO_FORMAL,
          summary="Every count is rounded to the nearest multiple of the base (halves up). No epsilon.",
          options={"base": 5}),
    Entry("random-round", "Random rounding to base 5 (no formal guarantee)", CURVES, _CURVE_CMDS, RANDOM_ROUNDING,
          DISCLOSURE_CONTROL, NO_NEIGHBOURS, URANDOM_INTEGERS + ": a count b q + r rounds up when an integer below b is "
          "below r (probability r / b exactly); only the rounding direction is used, the integer is never released",
          "dpsurv_core.disclosure.rounding:RandomRound", guarantee=NO_FORMAL,
          summary="Every count x = b q + r is rounded up to b (q + 1) with probability r / b, else down: unbiased. "
                  "No epsilon.", options={"base": 5}),
    Entry("cell-key", "Cell key perturbation (no formal guarantee)", CURVES, _CURVE_CMDS, CELL_KEY,
          DISCLOSURE_CONTROL, NO_NEIGHBOURS, "none at release time: a fixed record key per subject (keyed hash under "
          "the data holder's secret, 32 bytes drawn once from os.urandom) and a published perturbation table", "dpsurv_core.disclosure.cell_key:CellKey", guarantee=NO_FORMAL,
          summary="Each cell is perturbed by -2..2 as the published table says for its count and its cell key (the "
                  "sum of its subjects' fixed keys modulo 1): the same cell is always perturbed the same way. "
                  "No epsilon."),
    Entry("smooth-steps", "Step smoothing, k events per step (no formal guarantee)", CURVES, _CURVE_CMDS, SMOOTHING,
          DISCLOSURE_CONTROL, NO_NEIGHBOURS, NO_NOISE_SDC, "dpsurv_core.disclosure.smooth_steps:SmoothSteps",
          guarantee=NO_FORMAL, summary="Adjacent bins are merged until each step of the curve holds at least k events; "
          "the curve is flat inside a step. No epsilon.", options={"k": 5}),
    Entry("mle", "Weibull maximum likelihood (not private)", WEIBULL, ("weibull", "audit", "report"),
          "Kalbfleisch & Prentice (2002); R survival's survreg", NOTHING, "none", "none",
          "dpsurv_core.weibull.mechanisms:SurvregMLE", guarantee="none", private=False,
          summary="The non-private Weibull fit as R's survreg gives it: the times as they are, follow-up ending at the "
                  "horizon (shape = 1 / survreg's scale, scale = exp(intercept))."),
    Entry("clipped-mle", "Weibull clipped maximum likelihood (not private)", WEIBULL, ("weibull", "audit", "report"),
          NGUYEN_HUI_WEIBULL, NOTHING, "none", "none", "dpsurv_core.weibull.mechanisms:ClippedMLE",
          guarantee="none", private=False,
          summary="The clipped MLE the private mechanisms estimate: the maximum-likelihood fit on times divided by the "
                  "horizon and raised to at least e^-omega; the private Weibull mechanisms' reference.",
          options={"omega": 6.0}),
    Entry("lsp-tll", "LSP + TLL", WEIBULL, ("weibull", "audit"), NGUYEN_HUI_WEIBULL, SUBJECT, ADD_REMOVE,
          OPENDP_GUMBEL_MAX + " (exponential mechanism over LSP rungs); " + URANDOM_UNIFORM + " (position inside "
          "the rung); " + OPENDP_LAP + " (TLL sums); " + SNAPPED_WEIBULL,
          "dpsurv_core.weibull.mechanisms:LspTll",
          summary="Shape from the local-sensitivity ladder (exponential mechanism over rungs), scale from Laplace "
                  "noise on truncated log-likelihood sums; epsilon split evenly between them.",
          options={"omega": 6.0, "gamma": 10.0, "rungs": 500}),
    Entry("laplace", "Laplace on the MLE (baseline)", WEIBULL, ("weibull", "audit"), NGUYEN_HUI_WEIBULL, SUBJECT,
          ADD_REMOVE, OPENDP_LAP + "; " + SNAPPED_WEIBULL, "dpsurv_core.weibull.baselines:LaplaceWeibull",
          summary="Laplace noise of scale gamma/(epsilon/2) on each MLE parameter: the paper's baseline, shown to "
                  "make plain how much noise a global-sensitivity bound needs.",
          options={"omega": 6.0, "gamma": 10.0}),
    Entry("saa", "Sample and aggregate", WEIBULL, ("weibull", "audit"), NGUYEN_HUI_WEIBULL, SUBJECT, ADD_REMOVE,
          INTERNAL_INDEX + " (block assignment); " + OPENDP_LAP + " (the released estimates); " + SNAPPED_WEIBULL,
          "dpsurv_core.weibull.baselines:SampleAggregateWeibull",
          summary="MLE on M random blocks, averaged, with Laplace noise of scale gamma/(M epsilon/2).",
          options={"omega": 6.0, "gamma": 10.0, "blocks": None, "block_size": 500}),
    Entry("nonprivate", "Discrete-time logistic model (not private)", REGRESSION, ("regression", "audit", "report"),
          NGUYEN_HUI_REGRESSION, NOTHING, "none", "none", "dpsurv_core.regression.model:fit_nonprivate",
          guarantee="none", private=False, summary="The non-private discrete-time fit (ridge Lambda, default 0)."),
    Entry("cox", "Cox proportional hazards (not private)", REGRESSION, ("regression",), "Cox (1972); Therneau & "
          "Grambsch (2000), R survival's coxph", NOTHING, "none", "none", "dpsurv_core.regression.model:fit_cox",
          guarantee="none", private=False, summary="The Cox model fitted as R's coxph (Newton-Raphson, Efron ties by "
          "default, Breslow with --ties breslow): the clinical reference."),
    Entry("output", "Output perturbation", REGRESSION, ("regression", "audit", "report"), NGUYEN_HUI_REGRESSION,
          SUBJECT, ADD_REMOVE, _SPHERE, "dpsurv_core.regression.mechanisms:OutputPerturbation",
          summary="The ridge-penalised fit plus noise of density proportional to exp(-epsilon ||b|| / s), "
                  "s = 2 c1 / (n Lambda).", options={"lam": 0.01}),
    Entry("objective", "Objective perturbation", REGRESSION, ("regression", "audit", "report"), NGUYEN_HUI_REGRESSION,
          SUBJECT, ADD_REMOVE, _SPHERE, "dpsurv_core.regression.mechanisms:ObjectivePerturbation",
          summary="A random linear term b.w/n added to the penalised objective before minimising; an extra ridge "
                  "keeps eps' at least epsilon/2. Optionally a share of epsilon buys a noisy information matrix "
                  "(Wang, Kifer and Lee 2019) for narrower honest intervals.",
          options={"lam": 0.01, "information_share": 0.0}, audit_runs=100),
    Entry("psgld", "pSGLD posterior sampling", REGRESSION, ("regression", "audit", "report"), NGUYEN_HUI_REGRESSION,
          SUBJECT, ADD_REMOVE, OPENDP_GAUSS + " (Langevin noise); " + INTERNAL_INDEX + " (minibatches); "
          + URANDOM_INTEGERS + " (the epoch released); " + SNAPPED,
          "dpsurv_core.regression.mechanisms:PSGLD", guarantee="approximate (MCMC)",
          summary="A preconditioned stochastic-gradient Langevin chain sampling the sanitised posterior; its "
                  "guarantee is approximate because the chain only approximates the target density.",
          options={"bound_B": None, "prior_sd": 20.0, "epochs": 60, "burn_in": 30, "batch": None, "step": 8.0,
                   "step_decay": 100.0, "step_gamma": 0.55}, audit_runs=40),
)


DEFAULTS = {CURVES: "laplace-counts", WEIBULL: "lsp-tll", REGRESSION: "objective"}
# the exact, non-private fits each family's private results are compared with (for Weibull the clipped MLE, the
# estimator the private mechanisms estimate; "mle" is R's survreg fit on the times as they are)
REFERENCES = {CURVES: "nonprivate", WEIBULL: "clipped-mle", REGRESSION: "nonprivate"}
SURVREG = "mle"  # the Weibull fit R's survreg makes, on the times as they are (shown beside the clipped reference)


def default_id(family: str) -> str:
    """The mechanism offered first for a family."""
    return DEFAULTS[family]


def reference_id(family: str) -> str:
    """The non-private fit each family's private results are compared with."""
    return REFERENCES[family]


def entries(family: str | None = None, command: str | None = None, private: bool | None = None) -> list[Entry]:
    """Catalogue entries, optionally only one family, the ones a command serves, or only the private ones."""
    return [e for e in ENTRIES if (family is None or e.family == family)
            and (command is None or command in e.commands) and (private is None or e.private == private)]


def ids(family: str, command: str | None = None, private: bool | None = None) -> list[str]:
    return [e.id for e in entries(family, command, private)]


def get(family: str, mechanism_id: str) -> Entry:
    """The entry, or a sentence naming the choices."""
    for e in ENTRIES:
        if e.family == family and e.id == mechanism_id:
            return e
    raise ParameterError(f"Unknown {family} mechanism {mechanism_id!r}: choose one of {', '.join(ids(family))}.")


def find(mechanism_name: str) -> Entry | None:
    """The entry whose mechanism object is called ``mechanism_name`` (as recorded in the ledger), if any."""
    for e in ENTRIES:
        if e.id == mechanism_name or e.name == mechanism_name:
            return e
        try:
            if getattr(e.mechanism_class(), "name", None) == mechanism_name:
                return e
        except (ImportError, AttributeError):  # pragma: no cover - every target is a real class or function
            continue
    return None


def table() -> list[dict[str, Any]]:
    """The catalogue as JSON-ready rows (``python -m dpsurv_core mechanisms --json``)."""
    return [e.to_dict() for e in ENTRIES]


# ------------------------------------------------------------------------------------------ factories
# Each factory takes the entry, epsilon and the parameters the caller knows (context such as
# rows_per_subject, n_points, categories, horizon, the regression design) plus the entry's options.

def _opts(entry: Entry, params: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry.options)
    out.update({k: v for k, v in params.items() if k in entry.options and v is not None})
    return out


def _curve_nonprivate(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    mech = entry.mechanism_class()()
    mech.rows_per_subject = int(params.get("rows_per_subject", 1))  # what its tests say about several rows per patient
    return mech


def _laplace_counts(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    return entry.mechanism_class()(_eps(epsilon), rows_per_subject=params.get("rows_per_subject", 1))


def _adaptive_km(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    return entry.mechanism_class()(_eps(epsilon), rows_per_subject=params.get("rows_per_subject", 1))


def _disclosure_control(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    """SDC methods take no epsilon (whatever the caller passes is not used: they have none)."""
    return entry.mechanism_class()(rows_per_subject=params.get("rows_per_subject", 1), **_opts(entry, params))


def disclosure_ids(family: str = CURVES, command: str | None = None) -> list[str]:
    """The statistical-disclosure-control entries (no formal guarantee)."""
    return [e.id for e in entries(family, command) if not e.formal]


def _dp_ids(family: str = CURVES, command: str | None = None) -> list[str]:
    """The differentially private entries (a finite epsilon and a formal guarantee)."""
    return [e.id for e in entries(family, command, private=True) if e.formal]


def _time_indexed(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    o = _opts(entry, params)
    base = o.pop("base_epsilon")
    if "n_points" not in params:
        raise ParameterError("time-indexed needs the number of public grid points.")
    return entry.mechanism_class()(params["n_points"], epsilon=None if base is not None else _eps(epsilon),
                                   base_epsilon=base, **o)


def _rrr(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    cats = params.get("categories")
    if not cats or len(cats) < 2:
        raise ParameterError("rrr randomizes the group label: choose a group column with two or more groups.")
    mech = entry.mechanism_class()(_eps(epsilon), tuple(cats))
    mech.rows_per_subject = int(params.get("rows_per_subject", 1))  # what its tests say about several rows per patient
    return mech


def _weibull(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    from dpsurv_core.weibull.mechanisms import make_mechanism

    if "horizon" not in params:
        raise ParameterError("A Weibull mechanism needs the public horizon.")
    o = _opts(entry, params)
    kw: dict[str, Any] = {k: o[k] for k in ("omega", "gamma", "rungs", "blocks", "block_size") if k in o}
    for k in ("omega", "gamma", "rungs", "blocks", "block_size"):
        if k not in kw and params.get(k) is not None:
            kw[k] = params[k]
    if entry.id == "saa" and params.get("n_public") is not None:  # the declared n bounds the number of blocks
        kw["n_public"] = params["n_public"]
    # a private entry needs its epsilon like every other (None must not mean "no noise"); the MLE takes none
    return make_mechanism(entry.id, _eps(epsilon) if entry.private else math.inf, params["horizon"],
                          rows_per_subject=params.get("rows_per_subject", 1), **kw)


def _regression(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    from dpsurv_core.regression.mechanisms import build_mechanism

    if "pp" not in params:
        raise ParameterError("A regression mechanism needs the person-period design.")
    o = _opts(entry, params)
    lam = o.pop("lam", 0.01)
    return build_mechanism(entry.id, _eps(epsilon), params["pp"], lam=lam, **o)


def _not_a_mechanism(entry: Entry, epsilon: float | None, params: dict[str, Any]) -> Mechanism:
    raise ParameterError(f"{entry.name} is a non-private fit, not a mechanism: nothing about it can be released.")


def _eps(epsilon: float | None) -> float:
    from dpsurv_core.privacy.mechanism import check_epsilon

    if epsilon is None:
        raise ParameterError("epsilon is required for a private mechanism (for example 1).")
    return check_epsilon(epsilon)


_FACTORIES: dict[tuple[str, str], Callable[[Entry, float | None, dict[str, Any]], Mechanism]] = {
    (CURVES, "nonprivate"): _curve_nonprivate,
    (CURVES, "laplace-counts"): _laplace_counts,
    (CURVES, "time-indexed"): _time_indexed,
    (CURVES, "rrr"): _rrr,
    (CURVES, "adaptive-km"): _adaptive_km,
    (CURVES, "suppress-small-cells"): _disclosure_control,
    (CURVES, "round"): _disclosure_control,
    (CURVES, "random-round"): _disclosure_control,
    (CURVES, "cell-key"): _disclosure_control,
    (CURVES, "smooth-steps"): _disclosure_control,
    (WEIBULL, "mle"): _weibull,
    (WEIBULL, "clipped-mle"): _weibull,
    (WEIBULL, "lsp-tll"): _weibull,
    (WEIBULL, "laplace"): _weibull,
    (WEIBULL, "saa"): _weibull,
    (REGRESSION, "nonprivate"): _not_a_mechanism,
    (REGRESSION, "cox"): _not_a_mechanism,
    (REGRESSION, "output"): _regression,
    (REGRESSION, "objective"): _regression,
    (REGRESSION, "psgld"): _regression,
}
