"""Mechanism 3: randomized response on the group label ("RRR", De Faveri et al. 2024; docs/mechanisms.md).

PROTECTS THE GROUP LABEL ONLY. Survival times and events are published as they are; the
epsilon below is label-DP (neighbours: change one subject's group label), not record-level DP.

Each subject keeps its category with probability p, otherwise it reports a category drawn
uniformly from all k categories (its own included):
  Pr[report c | true c] = p + (1 - p) / k,   Pr[report c | true c'] = (1 - p) / k,
so the worst-case likelihood ratio is epsilon = ln((k p + 1 - p) / (1 - p)), and for a target
epsilon p = (e^eps - 1) / (e^eps - 1 + k). The slides' eps(n, p) = ln((np + 1 - p) / (n - 1 - np
+ p)) divides by the chance of reporting *any* other category instead of one particular other
category and understates the loss for k > 2 (:func:`slides_epsilon`, for the help text only).
Subjects with several rows report one label for all their rows. Everything computed from the
reported labels is post-processing: Kaplan-Meier per reported group, log-rank tables, and the
de-biased curves: with P the k x k response matrix (P[i, j] = Pr[report j | true i]),
E[reported cells] = P^T true cells for every count cell (subjects, events and censorings per bin,
hence at-risk too), so solving P^T x = reported per cell, clamping, then the usual KM gives
curves whose counts are unbiased before clamping. Vectorised over trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.curves.bootstrap import bootstrap_curves, with_bootstrap_bands
from dpsurv_core.curves.clamping import rrr_clamping
from dpsurv_core.curves.counts import BinnedCounts, post_process
from dpsurv_core.curves.kaplan_meier import actuarial_share, estimate
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, drawn, groups_of
from dpsurv_core.data.categories import row_index
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import CHANGE_LABEL, GROUP_LABEL, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource

LABEL_ONLY = ("protects the group label only: survival times and events are published as they are (label-DP, "
              "not record-level DP)")


def keep_probability(epsilon: float, k: int) -> float:
    """p = (e^eps - 1) / (e^eps - 1 + k); 1 for epsilon = inf."""
    if math.isinf(epsilon):
        return 1.0
    # written as 1 / (1 + k / (e^eps - 1)) with e^-eps, which does not overflow at large epsilon
    return 1.0 / (1.0 + k * math.exp(-epsilon) / -math.expm1(-epsilon))


def epsilon_of(p: float, k: int) -> float:
    """epsilon = ln((k p + 1 - p) / (1 - p)) for keep probability p and k categories."""
    if p >= 1.0:
        return math.inf
    return math.log((k * p + 1.0 - p) / (1.0 - p))


def slides_epsilon(p: float, k: int) -> float:
    """The seed slides' eps(n, p) = ln((np + 1 - p) / (n - 1 - np + p)); understates the loss for k > 2."""
    return math.log((k * p + 1.0 - p) / (k - 1.0 - k * p + p))


def response_matrix(p: float, k: int) -> np.ndarray:
    """P[i, j] = Pr[report j | true i] = p [i = j] + (1 - p) / k."""
    return p * np.eye(k) + (1.0 - p) / k


def row_cells(cohort: Cohort, grid: TimeGrid, competing: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Per row: flat event cell (type * J + bin, -1 if none), censoring bin (-1 if none), event type labels.

    Same binning as :func:`dpsurv_core.curves.counts.count`: events in (b_{j-1}, b_j], censorings in
    [b_{j-1}, b_j), before b_0 folded into bin 1, past b_J nowhere.
    """
    edges = grid.edges
    j_count = edges.size - 1
    if competing:
        if cohort.event_type is None:
            raise ParameterError("Cumulative incidence needs an event-type column: use pbc or transplant, or map the "
                                 "competing-event type.")
        etype = cohort.event_type.astype(np.int64)
        types = tuple(cohort.event_type_labels)
    else:
        etype = cohort.event.astype(np.int64)
        types = ("event",)
    d = etype > 0
    ev_bin = np.clip(np.searchsorted(edges, cohort.time, side="left"), 1, None)
    ce_bin = np.clip(np.searchsorted(edges, cohort.time, side="right"), 1, None)
    ev_cell = np.where(d & (ev_bin <= j_count), (etype - 1) * j_count + ev_bin - 1, -1)
    ce_cell = np.where(~d & (ce_bin <= j_count), ce_bin - 1, -1)
    return ev_cell, ce_cell, types


def counts_from_labels(labels: np.ndarray, ev_cell: np.ndarray, ce_cell: np.ndarray, grid: TimeGrid,
                       groups: tuple[str, ...], types: tuple[str, ...]) -> BinnedCounts:
    """Counts per trial from label indices (trials, rows) in 0..G-1 (rows with -1 are counted nowhere)."""
    trials, rows = labels.shape
    g_count, k_count, j_count = len(groups), len(types), grid.bins
    t_idx = np.broadcast_to(np.arange(trials)[:, None], labels.shape)
    ok = labels >= 0
    n = np.bincount((t_idx * g_count + labels)[ok], minlength=trials * g_count).reshape(trials, g_count)
    ev_ok = ok & (ev_cell >= 0)[None, :]
    flat = (t_idx * g_count + labels) * (k_count * j_count) + ev_cell[None, :]
    events = np.bincount(flat[ev_ok], minlength=trials * g_count * k_count * j_count)
    ce_ok = ok & (ce_cell >= 0)[None, :]
    flat = (t_idx * g_count + labels) * j_count + ce_cell[None, :]
    censored = np.bincount(flat[ce_ok], minlength=trials * g_count * j_count)
    return BinnedCounts(grid, groups, n, events.reshape(trials, g_count, k_count, j_count),
                        censored.reshape(trials, g_count, j_count), types)


def subject_labels(cohort: Cohort, groups: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(label index per subject, subject index per row); -1 for labels outside the categories."""
    assert cohort.group is not None  # randomized response refuses data without a group column
    row_label = row_index(cohort.group, groups)  # a declared 1.0 names the code 1
    if cohort.subject is None:
        return row_label, np.arange(cohort.n)
    _, row_subject = np.unique(cohort.subject, return_inverse=True)
    first = np.full(row_subject.max() + 1 if row_subject.size else 0, -2, dtype=np.int64)
    first[row_subject] = row_label
    if np.any(first[row_subject] != row_label):
        raise ParameterError("Some subjects have rows with different group labels: randomized response needs one "
                             "label per subject, so group by a per-subject column.")
    return first, row_subject


class RandomizedResponse(Mechanism):
    """k-ary randomized response on the group label; label-DP with epsilon = ln((kp + 1 - p) / (1 - p)).

    Parameters
    ----------
    epsilon : float
        The privacy budget on the labels, positive; ``math.inf`` keeps every label (p = 1).
    categories : sequence of str
        The public group categories, at least two; k is their number.

    Privacy
    -------
    Cost: epsilon = ln((k p + 1 - p) / (1 - p)), all of it on the labels (each kept with probability
    p = (e^eps - 1) / (e^eps - 1 + k)).
    Neighbours: change one subject's group label.
    Protects: the group label only (label-DP); times and events are published as they are.
    Source: De Faveri F. L., Faggioli G., Ferro N. & Spizzo R. (2024), "Dead or Alive, we can deny it".
    """

    name = "rrr"
    analysis = "survival curves"
    interval_includes_noise = True  # the de-biased curves' bands (dpsurv_core.curves.uncertainty)

    def __init__(self, epsilon: float, categories: Sequence[str]) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.categories = tuple(str(c) for c in categories)
        if len(self.categories) < 2:
            raise ParameterError("Randomized response on the group label needs at least two group categories: pass "
                                 "--group with a column of two or more groups.")
        self.k = len(self.categories)
        self.p = keep_probability(self.epsilon, self.k)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, neighbouring=CHANGE_LABEL, protects=GROUP_LABEL)

    @property
    def matrix(self) -> np.ndarray:
        return response_matrix(self.p, self.k)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "categories": list(self.categories), "k": self.k,
                "keep_probability": self.p,
                "report_own_probability": self.p + (1 - self.p) / self.k,
                "report_other_probability": (1 - self.p) / self.k,
                "slides_epsilon_for_this_p": None if self.p >= 1 else slides_epsilon(self.p, self.k),
                "protects": LABEL_ONLY}

    def randomize(self, labels: np.ndarray, noise: NoiseSource, trials: int = 1) -> np.ndarray:
        """Reported label indices (trials, subjects); labels of -1 (outside the categories) stay -1."""
        shape = (trials, labels.size)
        if self.p >= 1.0:
            return np.broadcast_to(labels, shape).copy()
        # categorical draws with public probabilities (exact integer arithmetic on a release source)
        keep = noise.choice(np.array([self.p, 1.0 - self.p]), shape) == 0
        draw = noise.choice(np.ones(self.k), shape)
        out = np.where(keep, labels[None, :], draw)
        return np.where(labels[None, :] < 0, -1, out)

    def debias(self, reported: BinnedCounts) -> BinnedCounts:
        """Solve P^T x = reported for every count cell (groups axis), then clamp (post-processing)."""
        inv = np.linalg.inv(self.matrix.T)
        n = np.einsum("gh,...h->...g", inv, reported.n.astype(float))
        ev = np.einsum("gh,...hkj->...gkj", inv, reported.events.astype(float))
        ce = np.einsum("gh,...hj->...gj", inv, reported.censored.astype(float))
        return post_process(replace(reported, n=n, events=ev, censored=ce))

    @staticmethod
    def clamping(rel: CurveResult) -> Any:
        """What clamping the de-biased counts at 0 adds to the first trial's cells (the inverse response matrix)."""
        if "debiased_counts" not in rel.extra or "matrix" not in rel.extra:
            return None
        return rrr_clamping(rel.extra["debiased_counts"].events[:1], np.asarray(rel.extra["matrix"], float),
                            rel.extra["debiased_counts"].censored[:1])

    def noise_law(self, extra: dict[str, Any] | None = None, debiased: bool = False) -> Any:
        """The label swaps (and, for the de-biased counts, the inverse response matrix and clamping)."""
        from dpsurv_core.curves.logrank_test import rrr_law

        return rrr_law(self, debiased)

    def draw(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
             competing: bool = False) -> dict[str, Any]:
        """The noisy output: the exact counts per *reported* label, each subject's label kept with probability p and
        otherwise swapped uniformly to another category (the label is what is protected)."""
        if cohort.group is None:
            raise ParameterError("Randomized response randomizes the group label: pass --group.")
        groups = groups_of(cohort, public)
        assert groups is not None  # the cohort has a group column
        if tuple(groups) != self.categories:
            raise ParameterError(f"The mechanism was built for the categories {', '.join(self.categories)} but the "
                                 f"public categories are {', '.join(groups)}.")
        subj_label, row_subject = subject_labels(cohort, self.categories)
        outside = int((subj_label < 0).sum())
        if outside:
            # such a subject would be counted nowhere, and changing its label to a declared one would add it with
            # certainty: the label-DP guarantee would not hold
            raise ParameterError(f"{outside} subject(s) have a group label outside the declared categories "
                                 f"({', '.join(self.categories)}): randomized response must be able to report every "
                                 "subject's label, so declare every category the data can contain.")
        reported_subject = self.randomize(subj_label, noise, trials)
        reported_rows = reported_subject[:, row_subject]
        ev_cell, ce_cell, types = row_cells(cohort, public.grid, competing)
        reported = counts_from_labels(reported_rows, ev_cell, ce_cell, public.grid, self.categories, types)
        return {"counts": reported.released(), "noise": noise.describe()}

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
                competing: bool = False) -> CurveResult:
        check_release(self, cohort, public, trials, competing)  # the memory it would take, before any work
        return drawn(self, self.draw(cohort, public, noise, trials, competing), public, competing)

    def read(self, released: dict[str, Any], public: PublicParameters, competing: bool = False) -> CurveResult:
        """The reported-label curves, the de-biased counts and curves and their bands, from the counts per reported
        label and the public swap matrix alone."""
        reported = BinnedCounts.from_released(released["counts"], public.grid)
        debiased = self.debias(reported)
        disclosures = [Disclosure("release", "not record-level DP: " + LABEL_ONLY + ".", dp=False),
                       *public.disclosures(CURVE_PARAMETERS)]
        notes = [f"epsilon {self.epsilon:.4g} " + LABEL_ONLY + ".",
                 f"keep probability p = (e^eps - 1) / (e^eps - 1 + k) = {self.p:.4g} for k = {self.k} categories."]
        a = actuarial_share(public.grid)
        debiased_curves = estimate(debiased, actuarial=a, noisy=self.p < 1)
        if self.p < 1:
            debiased_curves = with_bootstrap_bands(debiased_curves, bootstrap_curves(self, debiased, a))
            notes.append(f"The de-biased curves' bands carry the label noise: {debiased_curves.interval_method}"
                         ". The reported-label curves keep Greenwood's band, which is honest for what they estimate "
                         "(the survival of the mixture of groups the randomized labels define), not for each group.")
        return CurveResult(self.name, self.cost, self.parameters(), disclosures, estimate(reported, actuarial=a, noisy=self.p < 1), reported,
                            str(released.get("noise", "")), notes,
                            extra={"debiased_curves": debiased_curves, "debiased_counts": debiased,
                                   "matrix": self.matrix})  # public: P[h, g] = Pr(report g | true group h)
