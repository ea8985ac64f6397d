"""A plan in the ledger: the cap it sets, and whether each release keeps to it.

``budget set --plan plan.json`` sets a data set's cap from a plan file (the cap it was made for, else its total) and
keeps the plan's releases in the cap's ledger record (hash-chained with it, so the plan cannot be changed unseen
afterwards). From then on each release of that data set is compared with the planned releases not made yet: the same
mechanism at the same epsilon is *as planned* (the first such planned release is taken), anything else a *deviation
from plan*, which the command line releases only with ``--confirm-deviation``. The ledger record's note says which
(``as planned: release K ...`` or ``deviation from plan: ...``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpsurv_core.errors import ParameterError

AS_PLANNED = "as planned"
DEVIATION = "deviation from plan"
_MATCHED = re.compile(r"^as planned: release (\d+)\b")
MAX_PLAN_BYTES = 5_000_000


def summary(plan: dict[str, Any], source: str = "") -> dict[str, Any]:
    """What the ledger keeps of a plan: its releases (mechanism, analysis, epsilon, targets), total, cap, study and
    a SHA-256 of the plan as given; a file that is not a dpsurv plan is one sentence."""
    where = f" {source!r}" if source else ""
    try:
        version = int(plan["plan_version"])
        budget = plan["budget"]
        releases: list[dict[str, Any]] = [{"release": int(r["release"]), "mechanism": str(r["mechanism"]), "analysis": str(r["analysis"]),
                     "epsilon": float(r["epsilon"]), "targets": [str(t["target"]) for t in r["targets"]]}
                    for r in budget["releases"]]
        total = float(budget["total"])
        cap = None if budget.get("cap") is None else float(budget["cap"])
    except (KeyError, TypeError, ValueError):
        raise ParameterError(f"The file{where} is not a dpsurv plan: write one with `python -m dpsurv_core plan ... "
                             "--out plan.json`.") from None
    if version != 1:
        raise ParameterError(f"The plan{where} has version {version}, which this dpsurv does not read (it reads 1).")
    if not releases or any(not (math.isfinite(r["epsilon"]) and r["epsilon"] > 0) for r in releases):
        raise ParameterError(f"The plan{where} has no release with a positive epsilon.")
    digest = hashlib.sha256(json.dumps(plan, sort_keys=True).encode("utf-8")).hexdigest()
    return {"plan_version": version, "releases": releases, "total": total, "cap": cap,
            "reachable": bool(plan.get("reachable", True)), "study": plan.get("study"), "sha256": digest,
            "source": Path(source).name if source else ""}


def read_plan(path: str) -> dict[str, Any]:
    """The plan file at ``path`` (:func:`summary` of it)."""
    p = Path(path)
    if p.stat().st_size > MAX_PLAN_BYTES:
        raise ParameterError(f"--plan {path!r} is larger than 5 MB: it is not a dpsurv plan.")
    try:
        plan = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ParameterError(f"--plan {path!r} is not JSON: write one with `python -m dpsurv_core plan ... --out "
                             "plan.json`.") from None
    if not isinstance(plan, dict):
        raise ParameterError(f"--plan {path!r} is not a dpsurv plan.")
    return summary(plan, path)


def cap_of(plan: dict[str, Any], cap: float | None = None) -> float:
    """The cap a plan sets: the one it was made for, else its total; a different ``cap`` given with it is refused."""
    planned = plan["cap"] if plan["cap"] is not None else plan["total"]
    if cap is not None and not math.isclose(cap, planned, rel_tol=1e-9):
        raise ParameterError(f"--cap {cap:g} differs from the plan's cap {planned:g}: give one of them.")
    return float(planned)


def active_plan(records: Sequence[Any]) -> dict[str, Any] | None:
    """The plan a data set's cap was set from (the last cap record holding one), else None."""
    found = None
    for r in records:
        plan = r.body.get("plan") if isinstance(getattr(r, "body", None), dict) else None
        if isinstance(plan, dict) and plan.get("releases"):
            found = plan
    return found


def matched(records: Sequence[Any]) -> set[int]:
    """The planned releases (their numbers) that release records already marked as made."""
    out = set()
    for r in records:
        m = _MATCHED.match(str(r.body.get("note", "")) if isinstance(getattr(r, "body", None), dict) else "")
        if m:
            out.add(int(m.group(1)))
    return out


def adherence(records: Sequence[Any], mechanism: str, epsilon: float | None) -> tuple[str, str] | None:
    """(status, note) of a release of ``mechanism`` at ``epsilon`` against the data set's plan; None without one."""
    plan = active_plan(records)
    if plan is None:
        return None
    done = matched(records)
    left = [r for r in plan["releases"] if r["release"] not in done]
    for r in left:
        if r["mechanism"] == mechanism and epsilon is not None and math.isclose(r["epsilon"], epsilon, rel_tol=1e-9):
            return AS_PLANNED, (f"{AS_PLANNED}: release {r['release']} of the plan ({r['mechanism']} at epsilon "
                                f"{r['epsilon']:g}, {r['analysis']})")
    eps = "no epsilon" if epsilon is None else f"epsilon {epsilon:g}"
    todo = "; ".join(f"release {r['release']}: {r['mechanism']} at epsilon {r['epsilon']:g} ({r['analysis']})"
                     for r in left) or "none: every planned release was made"
    return DEVIATION, f"{DEVIATION}: {mechanism} at {eps} is not a planned release still to be made (planned: {todo})"


def checked_note(records: Sequence[Any], mechanism: str, epsilon: float | None, confirmed: bool,
                 how: str = "with --confirm-deviation") -> str:
    """The ledger note of a release (empty without a plan); a deviation not ``confirmed`` is refused in one
    sentence, before anything is drawn or charged. ``how``: how the deviation was confirmed, as the note says it."""
    found = adherence(records, mechanism, epsilon)
    if found is None:
        return ""
    status, note = found
    if status == DEVIATION and not confirmed:
        raise ParameterError(f"This release would be a {note}. Release what the plan says, or add "
                             "--confirm-deviation to release it anyway: the ledger will mark it as a deviation from "
                             "the plan.")
    return note + (f"; confirmed {how}" if status == DEVIATION else "")
