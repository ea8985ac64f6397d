"""Mechanism 2: time-indexed Laplace noise on the Kaplan-Meier curve (Veeraragavan et al. 2024; docs/mechanisms.md).

On the public grid's points t_1..t_n, per group, with base budget e and decay alpha:

  S~(t_i) = S(t_i) + Laplace(1 / (e (1 + alpha i)))      S = non-private KM, sensitivity 1
  clip:     min(S~(t_i), tau(i)) and max(., 0),  tau(i) = tau_start - (i / n)(tau_start - tau_end)
  smooth:   rolling mean over a centred window of w points ("mean": the mean of the values in the
            window; "as-published": the paper's sum divided by w even at the edges)
  monotone: running minimum, so the curve never rises.

Cost (docs/mechanisms.md, Theorem 1 of Veeraragavan et al. 2024 corrected): S(t_i) lies in [0, 1], so changing one subject
(or all m rows of one subject) changes it by at most 1, and step i is e(1 + alpha i)-DP. The n
steps compose sequentially: e_hat = e sum_{i=1..n} (1 + alpha i) = e n (1 + alpha (n + 1) / 2).
The paper sums from i = 0 and quotes e (n + 1)(1 + alpha n / 2), a slightly larger bound; the
paper's plots are labelled by e. Clipping, smoothing and the running minimum are post-processing.
Groups are disjoint sets of subjects, so the per-group curves compose in parallel: the release
costs e_hat. Two accounting modes: "fixed total" (the user sets e_hat; e = e_hat / (n (1 +
alpha (n + 1) / 2))) and "as published" (the user sets e; the ledger charges e_hat).

Defaults follow the settings Veeraragavan et al. 2024 reports best (sections 6.3-6.5): alpha = 0.5,
tau_start = 1.0, tau_end = 0.6, window w = 5 (the middle of the windows 3, 5, 7 it studies).
The mechanism releases no counts: no Greenwood variance, no number at risk, no log-rank test. Its band inverts
the noise pipeline (:func:`dpsurv_core.curves.uncertainty.time_indexed_bands`). The group sizes are not released,
so the sampling error enters the band only when the user declares them (``sample_size``: a public number, e.g.
from the study design); otherwise the band covers the noise only. The censoring is not released either: a declared
share (``censoring``, public, e.g. the design's expected share; one, or one per group) censors the band's simulated
cohorts uniformly, as the Weibull intervals do; without it they are uncensored, and the band is too narrow late in a
censored study. Coverage: docs/coverage-curves.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

import numpy as np

from dpsurv_core.curves.bootstrap import INVERSION_METHOD, SAMPLING_INVERSION_METHOD
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.kaplan_meier import SurvivalCurves, estimate
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, NonPrivate, drawn, groups_of, tile_trials
from dpsurv_core.curves.time_indexed_bands import time_indexed_bands
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource

EDGE_MODES = ("mean", "as-published")
FIXED_TOTAL = "fixed total"
AS_PUBLISHED = "as published"


def total_factor(n: int, alpha: float) -> float:
    """sum_{i=1..n} (1 + alpha i) = n (1 + alpha (n + 1) / 2): e_hat / e."""
    return n * (1.0 + alpha * (n + 1) / 2.0)


def paper_bound(e: float, n: int, alpha: float) -> float:
    """Paper 004's Theorem 1 (sum from i = 0): e (n + 1)(1 + alpha n / 2); larger than the exact total."""
    return e * (n + 1) * (1.0 + alpha * n / 2.0)


def rolling_mean(x: np.ndarray, window: int, edge_mode: str = "mean") -> np.ndarray:
    """Centred rolling mean along the last axis (pandas ``rolling(w, center=True, min_periods=1)``
    for "mean"; "as-published" divides the in-window sum by w everywhere)."""
    if window == 1:
        return x.copy()
    n = x.shape[-1]
    i = np.arange(n)
    lo = np.maximum(i - window // 2, 0)
    hi = np.minimum(i + (window - 1) // 2, n - 1)
    c = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, axis=-1)], axis=-1)
    sums = c[..., hi + 1] - c[..., lo]
    denom = (hi - lo + 1) if edge_mode == "mean" else window
    return sums / denom


def exact_survival(cohort: Cohort, public: PublicParameters, points: np.ndarray) -> np.ndarray:
    """Non-private KM per group at ``points``: (G, n). Groups (or cohorts) without events stay at 1."""
    groups = groups_of(cohort, public)
    n_groups = 1 if groups is None else len(groups)
    if cohort.n == 0 or not np.any(cohort.event == 1):
        return np.ones((n_groups, points.size))
    fine = estimate(tile_trials(count(cohort, TimeGrid.event_times(cohort), groups), 1))
    return fine.at_times(points, "survival")[0]


class TimeIndexed(Mechanism):
    """Time-indexed Laplace noise on the KM curve at n public grid points (Veeraragavan et al. 2024).

    Parameters
    ----------
    n_points : int
        n, the number of public grid points the curve is released at; at least 1.
    epsilon : float or None, default 1.0
        The total budget e_hat ("fixed total" accounting: the base epsilon is derived from it); positive, or
        ``math.inf`` for no noise. Ignored when ``base_epsilon`` is given.
    base_epsilon : float or None, default None
        The paper's e ("as published" accounting: the ledger charges e n (1 + alpha (n + 1) / 2)); positive.
    alpha : float, default 0.5
        The decay of the noise over the grid points (step i spends e (1 + alpha i)); finite, at least 0.
    tau_start : float, default 1.0
        The clipping threshold tau at the first grid point (linear to ``tau_end``); at most 1.
    tau_end : float, default 0.6
        The clipping threshold at the last grid point; 0 <= tau_end <= tau_start.
    window : int, default 5
        w, the number of grid points in the centred rolling mean; a whole number, at least 1 (1: no smoothing).
    edge_mode : {"mean", "as-published"}, default "mean"
        "mean" averages the points inside the window at the edges; "as-published" divides their sum by w.
    sample_size : int or sequence of int or None, default None
        The declared (public) group sizes, one or one per group, at least 1 each; they put the sampling error in the
        band. None: the band covers the noise only.
    censoring : float or sequence of float or None, default None
        The declared (public) censoring share, one or one per group, in [0, 1); the band's simulated cohorts are
        censored uniformly at it. Needs ``sample_size``. None: uncensored.

    Privacy
    -------
    Cost: epsilon = e n (1 + alpha (n + 1) / 2), e the base epsilon: grid point i spends e (1 + alpha i), the n compose
    sequentially (groups in parallel); clipping, smoothing and the running minimum are post-processing.
    Neighbours: add/remove one subject.
    Protects: one subject's rows (all m of them move S(t_i) by at most 1).
    Source: Veeraragavan N. R., Karimireddy S. P. & Nygard J. F. (2024), arXiv 2412.05164 (Theorem 1, corrected).
    """

    name = "time-indexed"
    analysis = "survival curves"
    interval_includes_noise = True  # the band inverts the noise pipeline (dpsurv_core.curves.uncertainty)
    interval_covers_sampling = False  # it releases no counts: the sampling term needs a declared group size
    band_draws = 400  # pipeline draws per candidate curve for the band

    def __init__(self, n_points: int, epsilon: float | None = 1.0, base_epsilon: float | None = None,
                 alpha: float = 0.5, tau_start: float = 1.0, tau_end: float = 0.6, window: int = 5,
                 edge_mode: str = "mean", sample_size: int | Sequence[int] | None = None,
                 censoring: float | Sequence[float] | None = None) -> None:
        if int(n_points) < 1:
            raise ParameterError(f"time-indexed needs at least one grid point, got {n_points}.")
        self.n_points = int(n_points)
        if not (alpha >= 0 and math.isfinite(alpha)):
            raise ParameterError(f"--alpha must be a number >= 0 (the paper uses 0.5), got {alpha}.")
        self.alpha = float(alpha)
        if not (0.0 <= tau_end <= tau_start <= 1.0):
            raise ParameterError(f"The clipping thresholds need 0 <= tau-end <= tau-start <= 1, got tau-start "
                                 f"{tau_start} and tau-end {tau_end}.")
        self.tau_start, self.tau_end = float(tau_start), float(tau_end)
        if int(window) != window or window < 1:
            raise ParameterError(f"--window must be a whole number of grid points >= 1, got {window}.")
        self.window = int(window)
        if edge_mode not in EDGE_MODES:
            raise ParameterError(f"--edge-mode must be one of {', '.join(EDGE_MODES)}, got {edge_mode!r}.")
        self.edge_mode = edge_mode
        self.sample_size = _sizes(sample_size)
        self.censoring = _share(censoring, self.sample_size)
        self.interval_covers_sampling = self.sample_size is not None  # a declared size puts the sampling in the band
        factor = total_factor(self.n_points, self.alpha)
        if base_epsilon is not None:
            self.mode = AS_PUBLISHED
            self.base_epsilon = check_epsilon(base_epsilon, "the base epsilon")
            self.epsilon = self.base_epsilon * factor
        else:
            if epsilon is None:
                raise ParameterError("time-indexed needs --epsilon (the total) or --base-epsilon (the paper's e).")
            self.mode = FIXED_TOTAL
            self.epsilon = check_epsilon(epsilon)
            self.base_epsilon = self.epsilon / factor

    @property
    def scales(self) -> np.ndarray:
        """Laplace scale at step i = 1..n: 1 / (e (1 + alpha i)) (0 without noise)."""
        if math.isinf(self.base_epsilon):
            return np.zeros(self.n_points)
        i = np.arange(1, self.n_points + 1)
        return 1.0 / (self.base_epsilon * (1.0 + self.alpha * i))

    @property
    def thresholds(self) -> np.ndarray:
        """tau(i) = tau_start - (i / n)(tau_start - tau_end), i = 1..n."""
        i = np.arange(1, self.n_points + 1)
        return self.tau_start - (i / self.n_points) * (self.tau_start - self.tau_end)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, neighbouring=ADD_REMOVE, protects=SUBJECT)

    def parameters(self) -> dict[str, Any]:
        return {"accounting": self.mode, "epsilon_total": self.epsilon, "base_epsilon": self.base_epsilon,
                "n_points": self.n_points, "alpha": self.alpha, "tau_start": self.tau_start, "tau_end": self.tau_end,
                "window": self.window, "edge_mode": self.edge_mode, "sensitivity": 1.0,
                "paper_theorem_bound": paper_bound(self.base_epsilon, self.n_points, self.alpha),
                "step_epsilons": (self.base_epsilon * (1 + self.alpha * np.arange(1, self.n_points + 1))).tolist(),
                **({} if self.sample_size is None else {"declared_group_size": list(self.sample_size),
                                                        "declared_censoring_share": list(self.censoring or (0.0,))})}

    def noisy(self, exact: np.ndarray, noise: NoiseSource, trials: int = 1) -> np.ndarray:
        """Step 1: S + Laplace(scale_i), (trials, G, n) (before any post-processing)."""
        shape = (trials, *exact.shape)
        out = np.broadcast_to(exact, shape).astype(float)
        if not math.isinf(self.base_epsilon):
            out = out + noise.laplace(np.broadcast_to(self.scales, shape), shape)
        return out

    def post_process(self, noisy: np.ndarray) -> np.ndarray:
        """Clip to [0, tau(i)], rolling mean, running minimum (all free post-processing)."""
        clipped = np.clip(noisy, 0.0, None)
        clipped = np.minimum(clipped, self.thresholds)
        smooth = rolling_mean(clipped, self.window, self.edge_mode)
        return np.minimum.accumulate(smooth, axis=-1)

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
                competing: bool = False) -> CurveResult:
        if competing:
            raise ParameterError("time-indexed releases only a survival curve, not counts by event type: use "
                                 "laplace-counts for cumulative incidence.")
        points = public.grid.points
        if points.size != self.n_points:
            raise ParameterError(f"This time-indexed mechanism was built for {self.n_points} grid points but the grid "
                                 f"has {points.size}.")
        _check_one_group_per_subject(cohort)
        check_release(self, cohort, public, trials)  # the band's memory, before any work
        if math.isinf(self.base_epsilon):
            return self._without_noise(cohort, public, noise, trials)
        return drawn(self, self.draw(cohort, public, noise, trials, competing), public, competing)

    def draw(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
             competing: bool = False) -> dict[str, Any]:
        """The noisy output: the curve at the public grid points plus decaying Laplace noise, clipped, smoothed and made
        non-increasing (the paper's post-processing is part of what it publishes), then snapped to the release grid
        (``noise.snap``: rounding to nearest keeps the curve in [0, 1] and non-increasing)."""
        groups = groups_of(cohort, public)
        labels = ("all",) if groups is None else tuple(groups)
        noisy = self.noisy(exact_survival(cohort, public, public.grid.points), noise, trials)
        survival = noise.snap(self.post_process(noisy))
        return {"groups": list(labels), "survival": survival.tolist(), "noise": noise.describe()}

    def read(self, released: dict[str, Any], public: PublicParameters, competing: bool = False) -> CurveResult:
        """The curve and its inverted band from the released curve, the public noise law and the declared sizes."""
        points = public.grid.points
        labels = tuple(str(g) for g in released["groups"])
        survival = np.array(released["survival"], float)
        with np.errstate(divide="ignore"):
            cumhaz = -np.log(survival)
        nan = np.full(survival.shape, np.nan)
        lower, upper, method = nan, nan, None
        if not math.isinf(self.base_epsilon):
            sizes = self.sample_size
            if sizes is not None and len(sizes) not in (1, len(labels)):
                raise ParameterError(f"Declare one group size or one per group ({len(labels)}), got {len(sizes)}.")
            if self.censoring is not None and len(self.censoring) not in (1, len(labels)):
                raise ParameterError(f"Declare one censoring share or one per group ({len(labels)}), got "
                                     f"{len(self.censoring)}.")
            lower, upper = time_indexed_bands(self, survival, np.asarray(points, float), self.band_draws,
                                              sizes=None if sizes is None else np.asarray(sizes),
                                              censoring=np.asarray(self.censoring or (0.0,)))
            censored = ("censored uniformly at the declared share " + ", ".join(f"{x:.0%}" for x in self.censoring)
                        if self.censoring and any(self.censoring) else "uncensored (no censoring share declared)")
            method = (INVERSION_METHOD if sizes is None else SAMPLING_INVERSION_METHOD).format(
                draws=self.band_draws, sizes=", ".join(str(x) for x in sizes or ()), censoring=censored)
        curves = SurvivalCurves(np.asarray(points, float), labels, survival, lower, upper, lower, upper, nan, nan, nan,
                                nan, cumhaz, np.full(survival.shape[:-1] + (1, survival.shape[-1]), np.nan), ("event",),
                                interval_method=method)
        notes = ["time-indexed releases the curve only: no counts, so no Greenwood variance, number at risk or "
                 "log-rank test; the cumulative hazard shown is -log of the private curve (post-processing)."]
        if method:
            notes.append("The band carries the noise: " + method + ".")
        if self.mode == AS_PUBLISHED:
            notes.append(f"As published: base epsilon e = {self.base_epsilon:.4g} per the paper; the true total charged "
                         f"is e n (1 + alpha (n + 1) / 2) = {self.epsilon:.4g}.")
        else:
            notes.append(f"Fixed total {self.epsilon:.4g}: the paper's base epsilon is e = {self.base_epsilon:.4g}.")
        return CurveResult(self.name, self.cost, self.parameters(), public.disclosures(CURVE_PARAMETERS), curves, None,
                            str(released.get("noise", "")), notes)

    def _without_noise(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int
                       ) -> CurveResult:
        """Noise switched off: the clipping and smoothing only reduce noise, so with none there is nothing for them to
        do and the release is the non-private one: the Kaplan-Meier curve at the grid points (R's summary(fit, times =
        grid)) with its Greenwood band, and the curves at every event time for its RMST; still no counts."""
        if not np.any(cohort.event == 1):  # no event: the curve is 1 throughout (no event-time grid to read it on)
            flat = estimate(tile_trials(count(cohort, public.grid, groups_of(cohort, public)), 1))
            exact = CurveResult(self.name, self.cost, {}, [], flat, None, "none",
                                 extra={"event_time_curves": flat})
        else:
            exact = NonPrivate().compute(cohort, public)
        c = exact.curves
        rep = lambda a: np.repeat(a, trials, axis=0) if isinstance(a, np.ndarray) and a.ndim > 1 else a  # noqa: E731
        tiled: dict[str, Any] = {f.name: rep(getattr(c, f.name)) for f in fields(c)}
        curves = replace(c, **tiled)
        notes = ["Epsilon inf: no noise, so the clipping and smoothing have nothing to reduce; the curve is the "
                 "non-private Kaplan-Meier curve at the grid points, with its Greenwood band (no counts are released)."]
        return CurveResult(self.name, self.cost, self.parameters(), public.disclosures(CURVE_PARAMETERS), curves, None,
                            noise.describe(), notes, extra={"event_time_curves": exact.extra["event_time_curves"]})


def _sizes(sample_size: float | Sequence[float] | None) -> tuple[int, ...] | None:
    """The declared (public) group sizes the band's sampling term uses, checked (whole numbers, possibly as floats)."""
    if sample_size is None:
        return None
    given: Any = sample_size  # a number, a sequence or an array: np.ndim tells them apart
    sizes = (given,) if np.ndim(given) == 0 else tuple(given)
    if not sizes or any(float(x) != int(x) or int(x) < 1 for x in sizes):
        raise ParameterError(f"The declared group size must be a whole number of subjects of at least 1, got "
                             f"{sample_size}.")
    return tuple(int(x) for x in sizes)


def _share(censoring: float | Sequence[float] | None, sizes: tuple[int, ...] | None) -> tuple[float, ...] | None:
    """The declared (public) censoring shares the band's simulated cohorts use (one, or one per group), checked: they
    need a declared size."""
    if censoring is None:
        return None
    given: Any = censoring  # a number, a sequence or an array: np.ndim tells them apart
    shares = (given,) if np.ndim(given) == 0 else tuple(given)
    try:
        ok = bool(shares) and all(math.isfinite(float(x)) and 0.0 <= float(x) < 1.0 for x in shares)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ParameterError(f"The declared censoring share must be a number from 0 up to (not including) 1 (one, or "
                             f"one per group), got {censoring}.")
    if sizes is None:
        raise ParameterError("A declared censoring share needs the declared group size too: the band simulates "
                             "cohorts of that size, censored at that share.")
    return tuple(float(x) for x in shares)


def parse_sizes(text: str | None) -> tuple[int, ...] | None:
    """Declared group sizes written as ``N`` or ``N1,N2,...`` (one per group, in the groups' order); blank: none."""
    if text is None or not str(text).strip():
        return None
    try:
        values = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(not math.isfinite(v) or v != int(v) or v < 1 for v in values):
        raise ParameterError(f"The declared group size must be whole numbers of at least 1 separated by commas (for "
                             f"example 120,108), got {text!r}.")
    return _sizes(values)


def parse_shares(text: str | None) -> tuple[float, ...] | None:
    """Declared censoring shares written as ``Q`` or ``Q1,Q2,...`` (0 <= Q < 1, one per group in the groups' order, or
    one for all; a percentage such as ``30%`` is read as 0.3); blank: none."""
    if text is None or not str(text).strip():
        return None
    try:
        values = [float(x.strip().rstrip("%")) / (100.0 if x.strip().endswith("%") else 1.0)
                  for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(not (math.isfinite(v) and 0.0 <= v < 1.0) for v in values):
        raise ParameterError(f"The declared censoring share must be numbers from 0 up to (not including) 1 separated by "
                             f"commas (for example 0.3 or 0.34,0.25), got {text!r}.")
    return tuple(values)


def _check_one_group_per_subject(cohort: Cohort) -> None:
    """Parallel composition over groups needs each subject in one group."""
    if cohort.subject is None or cohort.group is None:
        return
    _, inv = np.unique(cohort.subject, return_inverse=True)
    _, ginv = np.unique(cohort.group, return_inverse=True)
    first = np.full(inv.max() + 1 if inv.size else 0, -1)
    first[inv] = ginv
    if np.any(first[inv] != ginv):
        raise ParameterError("Some subjects have rows in different groups, so the groups are not disjoint sets of "
                             "subjects: group by a per-subject column.")
