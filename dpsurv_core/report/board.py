"""The board's summary: the first section of a release or review report, in plain words.

What is published and to whom it is safe, epsilon and what it means for one patient, the audit of the released plan
at the released epsilon (never another run; a review only: an audit attacks the real data, so its numbers are not
published), the comparison with today's disclosure control (a review only, for the same reason), and the budget: the
cap with each change and its reason. Everything here is read from the ledger records and the stored audits.

The risk statement is the hypothesis-testing reading of epsilon-DP (Wasserman and Zhou 2010; Kairouz, Oh and
Viswanath 2015): whatever else someone knows, seeing outputs that are epsilon-DP multiplies their odds that a given
patient is in the data by at most e^epsilon, so a prior of 1 in 2 becomes at most e^epsilon / (1 + e^epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dpsurv_core.privacy.chain import CAP_LOWER, CAP_RAISE, CAP_SET
from dpsurv_core.privacy.ledger import SUBJECT, Ledger, LedgerEntry, charged_sentence
from dpsurv_core.report.text import timestamp

TITLE = "Summary for the board"
CAP_WORDS = {CAP_SET: "cap set", CAP_RAISE: "cap raised", CAP_LOWER: "cap lowered"}


def risk_sentence(epsilon: float | None) -> str:
    """What ``epsilon`` means for one patient, in words (None: no formal guarantee)."""
    if epsilon is None or not math.isfinite(epsilon):
        return ("No formal guarantee: nothing bounds what these numbers reveal about one patient; someone who knows "
                "every other record may learn that patient's data.")
    factor = math.exp(epsilon)
    posterior = factor / (1.0 + factor)
    return (f"Epsilon {epsilon:.3g}: whatever else someone knows (even every other patient's record), seeing these "
            f"numbers can multiply their odds that a given patient is in the data, or has a given outcome, by at most "
            f"e^{epsilon:.3g} = {factor:.3g}; a 50% guess becomes at most {100 * posterior:.0f}%.")


def _published(entry: LedgerEntry, body: dict[str, Any]) -> str:
    inputs = body.get("public_inputs") or {}
    groups = inputs.get("categories") or []
    grid = (inputs.get("grid") or {}).get("edges") or []
    parts = [f"release {entry.record_id}: {entry.analysis} by {entry.mechanism}, recorded {timestamp(entry.time)}"]
    if groups:
        parts.append(f"groups {', '.join(str(g) for g in groups)}")
    if len(grid) > 1:
        parts.append(f"{len(grid) - 1} time bins up to {grid[-1]:g}")
    return "; ".join(parts)


def board_summary(items: Sequence[Any], ledger: Ledger, kind: str, chosen_audits: Sequence[tuple[Any, str, bool]] = (),
                  cap_history: Sequence[Any] = (), below: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """The summary's parts in order, each ("text", sentence), ("warning", sentence) or ("table", frame).

    ``items``: the report's release items (``entry`` and ``body``); ``chosen_audits``: (audit, tie sentence, warning)
    as the report shows them; ``cap_history``: the data set's cap records (set, raise, lower) in order; ``below``:
    sections a review adds after the records' own ("audit": the attack on the stored record at its released epsilon;
    "comparison": DP against suppression and rounding at that epsilon), which the summary then points to."""
    out: list[tuple[str, Any]] = []
    entries = [i.entry for i in items]
    if entries:
        out.append(("text", "What is published: " + " | ".join(_published(i.entry, i.body) for i in items) + ". Each "
                    "record holds the noisy output and the values declared for it; every number in this report is "
                    "read from these alone."))
        for e in entries:
            out.append(("text", f"Release {e.record_id}, its guarantee as run: {charged_sentence(e.cost, e.disclosures)}."))
    else:
        out.append(("text", "No release is in this report."))
    spent = ledger.spent(SUBJECT)
    formal = all(e.cost.formal for e in ledger.entries)
    out.append(("text", "Safe for: readers outside the hospital, to the degree epsilon says, for every patient in the "
                "data set. Over every release of this data set so far (composed): "
                + risk_sentence(spent if formal else None)))
    voided = ledger.void_reasons() if hasattr(ledger, "void_reasons") else []
    for reason in voided:
        out.append(("warning", f"Not covered by the guarantee: {reason}."))
    if kind == "review":
        tied = [(a, s) for a, s, warn in chosen_audits if not warn and a.analysis != "board"]
        other = [(a, s) for a, s, warn in chosen_audits if warn and a.analysis != "board"]
        boards = [a for a, _, _ in chosen_audits if a.analysis == "board"]
        if "audit" in below:
            out.append(("text", "Audit of the released plan: the attack on the stored record at the released epsilon, "
                                "in the section 'Privacy audit' below (its empirical epsilon against the charge)."))
        elif tied:
            for a, sentence in tied:
                lower = a.summary.get("empirical_epsilon_lower")
                said = ("" if lower is None else
                        f": empirical epsilon at least {float(lower):.3g} against {a.epsilon:g} charged")
                plain = f" {a.summary['sentence']}" if a.summary.get("sentence") else ""
                out.append(("text", f"Audit of the released plan ({a.title}){said}. {sentence}{plain}"))
        elif other:
            out.append(("warning", "No audit ran at the released epsilon: the audit in this review ran at another "
                                   "epsilon and does not measure these releases; run it again at the released epsilon "
                                   "on the Privacy audit page."))
        else:
            out.append(("warning", "No privacy audit was run for these releases: run one on the Privacy audit page "
                                   "before relying on the guarantee empirically."))
        if "comparison" in below:
            out.append(("text", "Compared with today's disclosure control (suppression, rounding) at the released "
                                "epsilon: see the comparison of methods below."))
        elif boards:
            out.append(("text", "Compared with today's disclosure control (suppression, rounding): see "
                        + "; ".join(f"'Privacy audit: {a.title}'" for a in boards) + " below."))
        else:
            out.append(("text", "No comparison with suppression or rounding was run (Privacy audit page, 'DP against "
                                "today's disclosure control')."))
    else:
        out.append(("text", "The privacy audit and the comparison with suppression and rounding attack the real data, "
                            "so their numbers are in the confidential review report, not here."))
    if ledger.cap is None:
        out.append(("warning", "No budget cap is set for this data set: nothing stops further releases from adding up."))
    else:
        left = max(ledger.cap - spent, 0.0)
        out.append(("text", f"Budget: cap epsilon {ledger.cap:g}, spent {spent:.3g}, left {left:.3g}."))
    rows = [{"time": timestamp(r.time), "act": CAP_WORDS.get(r.kind, r.kind), "cap": r.body.get("cap"),
             "reason": r.body.get("reason") or "—", "by": r.body.get("by") or "—"} for r in cap_history]
    if rows:
        out.append(("table", pd.DataFrame(rows)))
    return out
