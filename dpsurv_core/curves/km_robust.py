"""Robust (infinitesimal jackknife) variance of the Kaplan-Meier curve for several rows per subject, as R's
``survfit(Surv(time, status) ~ 1, id = id)`` computes it (survival 3.5; Therneau & Grambsch 2000, section 7.2; Lin &
Wei 1989 for the clustered sandwich).

At the distinct event times t_1 < t_2 < ... with n_j rows at risk (time >= t_j), d_j events and hazard h_j = d_j / n_j,
S(t_j) = S(t_{j-1}) (1 - h_j). The influence of subject (cluster) k on S follows the same recursion,

    U_k(t_j) = (1 - h_j) U_k(t_{j-1}) - S(t_{j-1}) (dN_k(t_j) - Y_k(t_j) h_j) / n_j,   U_k(t_0) = 0,

with Y_k(t_j) the subject's rows at risk at t_j and dN_k(t_j) its events there (the derivative of S with respect to
the subject's case weight). The robust standard error of S is se(t) = sqrt(sum_k U_k(t)^2), R's ``std.err`` for a
curve with an id (then on the scale of S, not of log S); between event times it stays at its last value. The
pointwise limits are R's survfit_confint with the standard error of log S taken as se / S (every ``conf.type``; plain
is S -/+ z se on the scale of S, so [0, 0] where S = 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpsurv_core.curves.kaplan_meier import confidence_limits
from dpsurv_core.curves.normal import two_sided_z


@dataclass(frozen=True)
class RobustCurve:
    """The Kaplan-Meier curve at its distinct event times with the robust standard error of S there."""

    time: np.ndarray
    survival: np.ndarray
    se: np.ndarray
    clusters: int

    def at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """S and its robust standard error at ``times`` (right-continuous steps: 1 and 0 before the first event)."""
        i = np.searchsorted(self.time, np.asarray(times, dtype=float), side="right") - 1
        before = i < 0
        j = np.maximum(i, 0)
        s = np.where(before, 1.0, self.survival[j] if self.time.size else 1.0)
        se = np.where(before, 0.0, self.se[j] if self.time.size else 0.0)
        return s, se

    def limits(self, times: np.ndarray, conf_type: str = "log", alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise (1 - alpha) limits at ``times`` from the robust standard error (R's survfit_confint, se(log S) =
        se / S; plain is S -/+ z se, clipped to [0, 1])."""
        s, se = self.at(times)
        if conf_type == "plain":  # on the scale of S: defined at S = 0 too ([0, 0] there, as R gives)
            z = two_sided_z(alpha)
            return np.maximum(s - z * se, 0.0), np.minimum(s + z * se, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_se = np.where(s > 0, se / s, np.inf)
        return confidence_limits(s, log_se ** 2, conf_type, alpha)


def robust_km(time: np.ndarray, event: np.ndarray, cluster: np.ndarray) -> RobustCurve:
    """The Kaplan-Meier curve and its robust (cluster) standard error (module docstring); ``cluster`` is each row's
    subject id.

    Parameters
    ----------
    time, event : numpy.ndarray
        Each row's time and event indicator.
    cluster : numpy.ndarray
        Each row's subject id.

    Returns
    -------
    RobustCurve
        The curve with its robust standard error.

    References
    ----------
    .. [1] Lin D. Y. & Wei L. J. (1989), The robust inference for the Cox proportional hazards model, JASA 84,
       1074-1078 (the infinitesimal jackknife R's ``survfit(..., id = id)`` uses).
    """
    t = np.asarray(time, dtype=float)
    d = np.asarray(event).astype(bool)
    _, k = np.unique(np.asarray(cluster), return_inverse=True)
    k = k.ravel()
    nk = int(k.max()) + 1 if k.size else 0
    order = np.argsort(t, kind="stable")
    t, d, k = t[order], d[order], k[order]
    times = np.unique(t[d])
    at_risk = np.bincount(k, minlength=nk).astype(float)  # Y_k at the current time: rows with time >= it
    influence = np.zeros(nk)
    out_s, out_se = np.empty(times.size), np.empty(times.size)
    km, pos = 1.0, 0
    for j, tj in enumerate(times):
        stop = np.searchsorted(t, tj, side="left")  # rows ending before t_j leave the risk set
        if stop > pos:
            at_risk -= np.bincount(k[pos:stop], minlength=nk)
            pos = stop
        n = float(t.size - pos)
        end = np.searchsorted(t, tj, side="right")
        dead = k[pos:end][d[pos:end]]
        h = dead.size / n
        influence = influence * (1.0 - h) + at_risk * km * h / n
        influence -= np.bincount(dead, minlength=nk) * km / n
        km *= 1.0 - h
        out_s[j], out_se[j] = km, np.sqrt(influence @ influence)
    return RobustCurve(times, out_s, out_se, nk)
