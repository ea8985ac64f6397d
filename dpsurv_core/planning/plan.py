"""Accuracy-first planning: from the targets a study needs to the epsilon of each release, before any data are read.

:func:`make_plan` takes a declared :class:`~dpsurv_core.planning.study.Study`, the targets
(:mod:`dpsurv_core.planning.targets`) and the mechanisms to consider, and for each mechanism finds the smallest
epsilon meeting each target in the median over simulated releases (:mod:`dpsurv_core.planning.search`), then the
release epsilon meeting every target it serves, checked by releasing the simulated cohorts at that epsilon itself
(``verify``). The plan's releases are one per analysis (curves with their log-rank tests, Weibull, regression), each
by the mechanism that needs the least epsilon for its targets, split under an optional cap
(:mod:`dpsurv_core.planning.budget`).

The returned dict (JSON-ready) is, with one mechanism::

    {"epsilon": E, "achieved": {target: {"median", "p10", "p90"}}, "targets": [{"target", "epsilon",
     "achieved": {...}, ...}], "mechanism": ..., "study": {...}, "budget": {...}, ...}

``epsilon`` is the total of the planned releases (with one mechanism, its release's smallest epsilon meeting every
target; 10, the largest searched, with ``reachable`` false when some target cannot be met below it), and
``achieved`` the precision each target reaches there. With several mechanisms the same keys describe the plan's
choice, and ``plans`` holds each mechanism's own plan keyed by its id.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.planning import targets as tg
from dpsurv_core.planning.budget import PlannedRelease, split
from dpsurv_core.planning.evaluate import DEFAULT_COHORTS, NULL_DRAWS, REGRESSION_TRIALS, Profile, profile_for
from dpsurv_core.planning.search import EPS_MAX, LADDER, Achieved, Search, Solution
from dpsurv_core.planning.study import Study
from dpsurv_core.planning.targets import Target
from dpsurv_core.publication.record import jsonable

ANALYSIS = {"curves": "survival curves (and their log-rank tests)", "weibull": "Weibull parameters",
            "regression": "regression"}
PLAN_VERSION = 1
INTERPOLATION = ("between two simulated epsilons each cohort's half-width is interpolated (its square linear in "
                 "1 / epsilon^2), a power by its probit linear in log epsilon")


def mechanism_family(mechanism: str) -> str:
    """The release family ("curves", "weibull", "regression") of a mechanism a plan can use."""
    for fam in ("curves", "power", "weibull", "regression"):
        if mechanism in tg.MECHANISMS[fam]:
            return tg.RELEASE_FAMILY[fam]
    known = sorted({m for ms in tg.MECHANISMS.values() for m in ms})
    raise ParameterError(f"--mechanism {mechanism!r} cannot be planned: choose one of {', '.join(known)} (a plan is "
                         "for mechanisms with an epsilon).")


def resolve_mechanisms(targets: Sequence[Target], mechanisms: Sequence[str] | None) -> list[str]:
    """The mechanisms to plan: the named ones (each target served by at least one; one named mechanism must serve
    every target), else every default mechanism of the targets' families."""
    if not targets:
        raise ParameterError("Give at least one --target, for example survival:365:0.05.")
    if mechanisms:
        chosen = list(dict.fromkeys(mechanisms))
        for m in chosen:
            mechanism_family(m)
        for t in targets:
            if not any(tg.applicable(t, m) for m in chosen):
                raise ParameterError(tg.not_applicable(t, chosen[0]) if len(chosen) == 1 else
                                     f"None of {', '.join(chosen)} can serve the target {t.key}: add one of "
                                     f"{', '.join(tg.MECHANISMS[t.family])}.")
        return chosen
    out: list[str] = []
    for t in targets:
        out += [m for m in tg.DEFAULT_MECHANISMS[t.family] if m not in out]
    return out


def guarantee(mechanism: str, epsilon: float) -> dict[str, Any]:
    """The mechanism's guarantee from the catalogue, in words, at ``epsilon``."""
    from dpsurv_core.privacy import catalogue

    entry = catalogue.get(mechanism_family(mechanism), mechanism)
    unit = "one subject's group label" if entry.protects == catalogue.GROUP_LABEL else "one subject's record"
    how = "is in the data or not" if entry.neighbouring == catalogue.ADD_REMOVE else "is changed"
    approx = "" if entry.guarantee == "exact" else f" The guarantee is {entry.guarantee}."
    words = (f"Whether {unit} {how} changes the probability of any published result by at most a factor "
             f"e^{epsilon:g} = {math.exp(min(epsilon, 700.0)):.3g}.{approx}")
    return {"name": entry.name, "source": entry.paper, "protects": entry.protects, "neighbouring": entry.neighbouring,
            "guarantee": entry.guarantee, "in_words": words}


def _cohorts(cohorts: int | None, power_cohorts: int | None) -> dict[str, int]:
    out = dict(DEFAULT_COHORTS)
    if cohorts is not None:
        if cohorts < 5:
            raise ParameterError(f"--cohorts must be at least 5 (a median of fewer is no plan), got {cohorts}.")
        out.update(curves=cohorts, weibull=cohorts, regression=max(1, math.ceil(cohorts / REGRESSION_TRIALS)))
    if power_cohorts is not None:
        if power_cohorts < 50:
            raise ParameterError(f"--power-cohorts must be at least 50 (a power needs many releases), got {power_cohorts}.")
        out["power"] = power_cohorts
    return out


class Planner:
    """One plan's searches: a profile per mechanism, family and scenario, shared by every target it reads."""

    def __init__(self, study: Study, cohorts: dict[str, int], seed: int,
                 cache: dict[tuple[Any, ...], Profile] | None = None, verify: bool = True, jobs: int = 1,
                 say: Callable[[str], None] | None = None) -> None:
        self.study, self.cohorts, self.seed, self.verify, self.jobs = study, cohorts, int(seed), verify, int(jobs)
        self.say = say  # told of each release made (a line of progress)
        self.cache = cache if cache is not None else {}
        self._searches: dict[tuple[Any, ...], Search] = {}

    def search(self, target: Target, mechanism: str, targets: Sequence[Target]) -> Search:
        prof = profile_for(self.study, target, mechanism, self.cohorts, self.seed, self.cache)
        key = (id(prof), tuple(t.key for t in targets))
        if key not in self._searches:
            mine = [t for t in targets if profile_for(self.study, t, mechanism, self.cohorts, self.seed,
                                                      self.cache) is prof]
            self._searches[key] = Search(prof, mine, say=self.say)
        return self._searches[key]

    def mechanism_plan(self, mechanism: str, targets: Sequence[Target]) -> tuple[dict[str, Any], PlannedRelease]:
        mine = [t for t in targets if tg.applicable(t, mechanism)]
        searches = {t.key: self.search(t, mechanism, mine) for t in mine}
        sols: dict[str, Solution] = self._solve_parallel(mechanism, mine, searches) if self.jobs > 1 else {}
        sols.update({t.key: searches[t.key].solve(t) for t in mine if t.key not in sols})
        reachable = all(s.reachable for s in sols.values())
        eps = max((s.epsilon for s in sols.values() if s.epsilon is not None), default=EPS_MAX)
        eps = eps if reachable else EPS_MAX
        at = self._verified(mine, searches, sols, eps) if reachable else {
            t.key: searches[t.key].at(t, eps) for t in mine}
        if reachable:
            eps = next(iter(at.values())).epsilon
        release = PlannedRelease(mechanism, ANALYSIS[mechanism_family(mechanism)], list(mine), searches)
        release.epsilon, release.achieved = eps, at
        notes = [n for s in sols.values() for n in s.notes]
        out = {"mechanism": mechanism, "analysis": release.analysis, "epsilon": eps, "reachable": reachable,
               "achieved": {k: a.to_dict() for k, a in at.items()},
               "targets": [target_entry(t, sols[t.key], self.study.unit) for t in mine],
               "guarantee": guarantee(mechanism, eps), "notes": notes}
        return out, release

    def _solve_parallel(self, mechanism: str, mine: Sequence[Target], searches: dict[str, Search]
                        ) -> dict[str, Solution]:
        """Each profile's searches in a process of its own (forked: the declaration and the imports are shared), at
        most ``jobs`` at once; their released values are kept in this process's profiles. {} where fork is not
        available or there is one profile only (the caller then solves here)."""
        import multiprocessing as mp

        groups: dict[int, list[Target]] = {}
        for t in mine:
            groups.setdefault(id(searches[t.key].profile), []).append(t)
        if len(groups) < 2 or "fork" not in mp.get_all_start_methods():
            return {}
        work = [(self.study, mechanism, self.cohorts, self.seed, ts) for ts in groups.values()]
        with mp.get_context("fork").Pool(min(self.jobs, len(work))) as pool:
            results = pool.map(_solve_remote, work)
        out: dict[str, Solution] = {}
        for ts, (sols, values, evaluations) in zip(groups.values(), results):
            search = searches[ts[0].key]
            search.profile._values.update(values)
            search.profile.evaluations += evaluations
            search.asked.update(eps for eps, _ in values)
            out.update({s.target.key: s for s in sols})
        return out

    def _verified(self, mine: Sequence[Target], searches: dict[str, Search], sols: dict[str, Solution], eps: float
                  ) -> dict[str, Achieved]:
        """Every target at the release epsilon, released there when ``verify``; a target that the releases at it
        miss (the interpolation was optimistic) moves the epsilon up to its bracket's upper ladder epsilon."""
        for _ in range(len(LADDER)):
            at = {t.key: _released_at(searches[t.key], t, eps) if self.verify else searches[t.key].at(t, eps)
                  for t in mine}
            missed = [t for t in mine if not at[t.key].met]
            if not missed:
                return at
            ups = [b[1] for t in missed if (b := sols[t.key].bracket)] + \
                [e for e in LADDER if e > eps][:1]
            eps = max(min(ups), eps) if ups else eps
            if eps >= EPS_MAX:
                return {t.key: _released_at(searches[t.key], t, EPS_MAX) for t in mine}
        return at


def _solve_remote(job: tuple[Study, str, dict[str, int], int, list[Target]]
                  ) -> tuple[list[Solution], dict[tuple[float, Any], Any], int]:
    """One profile's searches, in a worker process: (solutions, the values released, how many epsilons)."""
    study, mechanism, cohorts, seed, targets = job
    prof = profile_for(study, targets[0], mechanism, cohorts, seed, {})
    search = Search(prof, targets)
    sols = [search.solve(t) for t in targets]
    return sols, dict(prof._values), prof.evaluations


def _released_at(search: Search, target: Target, eps: float) -> Achieved:
    """The achieved precision of releases made at ``eps`` itself (no interpolation)."""
    from dpsurv_core.planning.search import summarise

    return summarise(target, search.values(eps)[target.key], search.groups, eps)


def target_entry(t: Target, s: Solution, unit: str) -> dict[str, Any]:
    """A target's line of the plan: its smallest epsilon (null: not reachable below 10) and the achieved precision."""
    out: dict[str, Any] = {"target": t.key, "description": t.describe(unit), **t.to_dict(), "epsilon": s.epsilon,
                           "reachable": s.reachable, "achieved": s.achieved.to_dict()}
    if not s.reachable:
        out["achieved_at"] = s.achieved.epsilon
        out["note"] = s.notes[0] if s.notes else f"not reachable below epsilon {EPS_MAX:g}"
    if s.floor is not None:
        out["without_noise"] = s.floor if math.isfinite(s.floor) else None
    return out


def make_plan(study: Study, targets: Sequence[Target], mechanisms: Sequence[str] | None = None,
              cap: float | None = None, cohorts: int | None = None, power_cohorts: int | None = None, seed: int = 1,
              verify: bool = False, cache: dict[tuple[Any, ...], Profile] | None = None,
              progress: Callable[[str], None] | None = None, jobs: int = 1) -> dict[str, Any]:
    """The plan (module docstring). ``cache``: profiles kept between calls (the app keeps one per declaration);
    ``progress``: told, a line at a time, what is planned and each release of the simulated cohorts made; ``jobs``:
    processes searching a mechanism's profiles (curves, each log-rank scenario) at once.

    Parameters
    ----------
    study : Study
        The declared study (its simulated cohorts).
    targets : sequence of Target
        The precision asked for, each target once.
    mechanisms : sequence of str, optional
        Catalogue ids to consider; default every mechanism serving a target.
    cap : float, optional
        A budget cap the plan's releases are split under.
    cohorts, power_cohorts : int, optional
        Simulated cohorts per epsilon (at least 5), and for a power target (at least 50).
    seed : int, default 1
        Seed of the simulations.
    verify : bool, default False
        Check the planned epsilon by releasing the simulated cohorts at it.
    cache : dict, optional
        Profiles kept between calls.
    progress : callable, optional
        Told, a line at a time, what is planned.
    jobs : int, default 1
        Processes searching at once.

    Returns
    -------
    dict
        The plan, JSON-ready (module docstring): ``epsilon``, ``achieved``, ``targets``, ``mechanism``, ``study``,
        ``budget``.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        For a bad cap, a repeated target, too few cohorts or no mechanism serving a target.
    """
    t0 = time.perf_counter()
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        raise ParameterError(f"--cap must be a positive epsilon, got {cap}.")
    keys = [t.key for t in targets]
    if len(set(keys)) != len(keys):
        raise ParameterError("The same --target is given twice: give each target once.")
    chosen = resolve_mechanisms(targets, mechanisms)
    planner = Planner(study, _cohorts(cohorts, power_cohorts), seed, cache, verify, jobs, say=progress)
    plans: dict[str, dict[str, Any]] = {}
    releases: dict[str, PlannedRelease] = {}
    for m in chosen:
        if progress:
            progress(f"planning {m}")
        plans[m], releases[m] = planner.mechanism_plan(m, targets)
    picked = pick_releases(targets, plans, releases)
    budget = split(picked, cap, progress)
    by_key = {t["target"]: (r["mechanism"], t) for r in budget["releases"] for t in r["targets"]}
    per_target = []
    for t in targets:
        mech, line = by_key[t.key]
        own = next(e for e in plans[mech]["targets"] if e["target"] == t.key)
        per_target.append({**own, "mechanism": mech, "planned_epsilon": next(
            r["epsilon"] for r in budget["releases"] if r["mechanism"] == mech), "achieved_as_planned": line["achieved"]})
    reachable = all(p["reachable"] for m, p in plans.items() if m in {r.mechanism for r in picked})
    out: dict[str, Any] = {
        "epsilon": budget["total"], "reachable": bool(reachable and budget["meets_all"]),
        "achieved": {t.key: by_key[t.key][1]["achieved"] for t in targets},
        "targets": per_target, "study": study.to_dict(), "budget": budget,
        "releases": [{"mechanism": r.mechanism, "analysis": r.analysis, "epsilon": r.epsilon,
                      "targets": [t.key for t in r.targets], "guarantee": guarantee(r.mechanism, r.epsilon)}
                     for r in picked],
        "simulation": simulation_note(planner, seed),
        "plan_version": PLAN_VERSION, "reads_data": False,
    }
    if len(chosen) == 1:
        only = plans[chosen[0]]
        out.update(mechanism=chosen[0], guarantee=only["guarantee"], notes=only["notes"])
        if cap is None:  # one mechanism, no cap: exactly its own plan
            out["epsilon"], out["achieved"] = only["epsilon"], only["achieved"]
    else:
        out["plans"] = plans
        out["notes"] = [n for p in plans.values() for n in p["notes"]]
    if not out["reachable"]:
        out["not_reachable"] = [t.key for t in targets
                                if not next(e for e in plans[by_key[t.key][0]]["targets"] if e["target"] == t.key)
                                ["reachable"]]
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return jsonable(out, strict=False)  # strict JSON: an interval with no finite limit reads null


PREFILLED = (tg.CURVES, tg.POWER)  # the families whose releases are kept at every ladder epsilon


def prefill(study: Study, targets: Sequence[Target], mechanisms: Sequence[str] | None = None,
            cohorts: int | None = None, seed: int = 1, cache: dict[tuple[Any, ...], Profile] | None = None,
            progress: Callable[[float], None] | None = None, power_cohorts: int | None = None,
            around: Sequence[float] = (), lock: AbstractContextManager[Any] | None = None) -> int:
    """Release the simulated cohorts of every curve and log-rank profile ``targets`` use at every ladder epsilon (and
    without noise), read them for each target, and keep both in ``cache``: a later survival, median or RMST target of
    this declaration is then read from stored releases (post-processing only), and a target whose goal changes (a
    half-width, a power) from stored readings, with no new release (the app redraws a changed target at once). A log-rank target at a new
    hazard ratio is a new scenario: its cohorts are simulated when it is planned. Returns how many (profile, epsilon)
    pairs were released or read (0 when every one already was). With ``around`` (the epsilons a plan found), the
    epsilons nearest them (in log epsilon) come first: a target changed before the filling-in ends most likely needs
    those. ``lock`` (the app's, for profiles its sessions share) is held for each release only, so that another plan
    of the declaration need not wait for the whole filling-in."""
    sizes = _cohorts(cohorts, power_cohorts)
    todo: list[tuple[Profile, list[Target], float]] = []
    with lock or nullcontext():  # the cache's profiles found (or made) as a plan would
        for m in (resolve_mechanisms(targets, None) if mechanisms is None else list(mechanisms)):
            profiles: dict[int, tuple[Profile, list[Target]]] = {}
            for t in targets:
                if t.family in PREFILLED and tg.applicable(t, m):
                    prof = profile_for(study, t, m, sizes, seed, cache)
                    profiles.setdefault(id(prof), (prof, []))[1].append(t)
            for prof, mine in profiles.values():
                # and without noise, where the search reads how far the precision can go (Search.floor)
                every = (*LADDER, math.inf) if m != "rrr" else LADDER
                todo += [(prof, mine, eps) for eps in every if not prof.has(mine, eps)]
    near = [math.log(e) for e in around if e and math.isfinite(e) and e > 0]
    if near:
        todo.sort(key=lambda job: min(abs(math.log(job[2]) - x) for x in near) if math.isfinite(job[2]) else math.inf)
    for k, (prof, mine, eps) in enumerate(todo):
        with lock or nullcontext():
            prof.values(mine, eps)
        if progress:
            progress((k + 1) / len(todo))
    return len(todo)


def kept_releases(cache: dict[tuple[Any, ...], Profile]) -> int:
    """How many epsilons the profiles kept in ``cache`` have released their simulated cohorts at (a count that grows
    only when something new is simulated)."""
    return sum(p.evaluations for p in cache.values())


def pick_releases(targets: Sequence[Target], plans: dict[str, dict[str, Any]],
                  releases: dict[str, PlannedRelease]) -> list[PlannedRelease]:
    """One release per analysis: among the mechanisms serving every target of that analysis, the one reaching them
    all at the smallest epsilon (ties: the order given); an analysis no single mechanism serves whole takes, per
    target, the first mechanism that reaches it at the smallest epsilon."""
    out: list[PlannedRelease] = []
    families = list(dict.fromkeys(tg.RELEASE_FAMILY[t.family] for t in targets))
    for fam in families:
        wanted = {t.key for t in targets if tg.RELEASE_FAMILY[t.family] == fam}
        whole = [m for m, r in releases.items() if {t.key for t in r.targets} >= wanted
                 and mechanism_family(m) == fam]
        if whole:
            best = min(whole, key=lambda m: (not plans[m]["reachable"], plans[m]["epsilon"]))
            r = releases[best]
            r.targets = [t for t in r.targets if t.key in wanted]
            out.append(r)
            continue
        left = set(wanted)
        for m in sorted((m for m in releases if mechanism_family(m) == fam),
                        key=lambda m: (-len({t.key for t in releases[m].targets} & left), plans[m]["epsilon"])):
            take = [t for t in releases[m].targets if t.key in left]
            if take:
                r = releases[m]
                r.targets = take
                out.append(r)
                left -= {t.key for t in take}
    return out


def simulation_note(planner: Planner, seed: int) -> dict[str, Any]:
    """How the plan was simulated; ``epsilons_released`` are the epsilons each profile's search read (those a fresh
    plan releases, whatever a kept profile holds besides)."""
    released = {s.profile.describe(): [e for e in s.evaluated if math.isfinite(e)] for s in planner._searches.values()}
    return {"cohorts": planner.cohorts, "seed": seed, "null_draws_per_test": NULL_DRAWS,
            "regression_releases_per_cohort": REGRESSION_TRIALS, "epsilons_searched": list(LADDER),
            "epsilons_released": released, "interpolation": INTERPOLATION,
            "note": "simulated cohorts of the declared study only: no data set was read, nothing was released or "
                    "charged"}
