"""Explore freely, release once: the preview label and the Release button every analysis page uses.

A page builds a :class:`~dpsurv_core.privacy.release.Plan` from its widgets, shows
``preview(plan)`` (seeded simulation noise: costs nothing, recorded nowhere, never exported) and
calls :func:`release_button`. Only a click on the button runs the release protocol: a fresh draw
from the release noise source, charged against the data set's budget in the ledger database, with
a record id. Opening a page, moving a slider, changing a setting or reloading charges nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import streamlit as st

from dpsurv_app import capacity, session
from dpsurv_core.errors import BudgetExceededError, DpsurvError
from dpsurv_core.planning.adherence import AS_PLANNED, DEVIATION, adherence, checked_note
from dpsurv_core.privacy.ledger import charged_sentence
from dpsurv_core.privacy.release import (
    PREVIEW_LABEL,
    Plan,
    Released,
    charge_phrase,
    release,
    uncertainty_sentence,
)
from dpsurv_core.privacy.release import preview as run_preview
from dpsurv_core.publication import UndeclaredValueError, undeclared
from dpsurv_core.publication.declared import Undeclared
from dpsurv_core.report.text import markdown_literal


def preview_key(plan: Plan) -> dict[str, Any]:
    """What a preview's noise is tied to: the data, the mechanism, its epsilon and settings, and the rest of the
    command (less the reading options, which change how a draw is read, not the draw)."""
    return {"data": plan.fingerprint, "family": plan.entry.family, "mechanism": plan.entry.id,
            "epsilon": plan.cost.epsilon, "settings": plan.mechanism.parameters(),
            "command": READING_OPTIONS.sub("", plan.command)}


DRAWS = "preview_draws"  # per plan: how many times "Another draw" was clicked


def preview_draw(plan: Plan) -> int:
    """Which preview draw of ``plan`` is shown (0 until "Another draw" is clicked)."""
    return int(st.session_state.get(DRAWS, {}).get(repr(sorted(preview_key(plan).items(), key=str)), 0))


def another_draw_button(plan: Plan, key: str) -> None:
    """A button that shows another preview draw of ``plan`` (free: previews are for this screen only, never
    released; the person at the keyboard may see the data anyway)."""
    if st.button("Another draw", key=f"another-draw-{key}", icon=":material/casino:",
                 help="A fresh simulated draw of this plan, to see how much the noise moves the numbers. Free, never "
                      "exported; a release makes its own draw."):
        draws = st.session_state.setdefault(DRAWS, {})
        k = repr(sorted(preview_key(plan).items(), key=str))
        draws[k] = draws.get(k, 0) + 1


def preview_seed(plan: Plan, draw: int | None = None) -> int:
    """This session's seed for previews of ``plan``: one per (mechanism, epsilon, settings) and draw (another one
    after each "Another draw"; ``draw``: that draw instead of the one shown), see :func:`dpsurv_app.session.preview_seed`."""
    draw = preview_draw(plan) if draw is None else int(draw)
    return session.preview_seed(preview_key(plan) if draw == 0 else {**preview_key(plan), "draw": draw})


def preview(plan: Plan, trials: int = 1, draw: int | None = None) -> Any:
    """The plan computed with this session's preview seed for it (no charge; ``draw``: the preview "Another draw"
    shows after that many clicks, instead of the one shown), under a slot of the server's work (:mod:`dpsurv_app.capacity`:
    when none comes free, one sentence and the script stops)."""
    with capacity.heavy_or_stop():
        return run_preview(plan, preview_seed(plan, draw), trials)


def preview_caption(plan: Plan) -> None:
    """The mark every preview carries, with the cost a release would charge."""
    deterministic = bool(getattr(plan.mechanism, "deterministic", False))  # a disclosure-control rule draws nothing
    what = "the rule applied to the data" if deterministic else "a draw with simulation noise"
    st.caption(f"**{PREVIEW_LABEL.capitalize()}**: {what} that costs nothing and is never "
               f"exported. Releasing this plan {charge_phrase(plan.cost, False, plan.disclosures)}. "
               f"{uncertainty_sentence(plan)}")


# options of a command that say how the release is read (the band type, landmark and RMST times), not what is drawn
READING_OPTIONS = re.compile(r" --(?:conf-type|landmarks|rmst) \S+")


def plan_key(plan: Plan, key: str) -> str:
    """The release a page keeps showing: changing how it is read (``READING_OPTIONS``) keeps it."""
    params = sorted((k, repr(v)) for k, v in plan.mechanism.parameters().items())
    command = READING_OPTIONS.sub("", plan.command)
    return f"{key}|{plan.fingerprint}|{plan.entry.family}|{plan.entry.id}|{params}|{command}"


ACCEPT_OPTION = re.compile(r" --accept-disclosure \S+")


def same_command(a: str, b: str) -> bool:
    """The two command lines run the same plan read the same way (values published as read off the data, which the
    data holder accepted at the click, are not part of what is read)."""
    return ACCEPT_OPTION.sub("", a) == ACCEPT_OPTION.sub("", b)


def _with_accept(command: str, names: tuple[str, ...]) -> str:
    """``command`` with ``--accept-disclosure NAMES`` (so that it runs again as it was released), before ``--json``."""
    if not names or not command:
        return command
    import shlex

    option = f" --accept-disclosure {shlex.quote(','.join(names))}"
    return command[:-len(" --json")] + option + " --json" if command.endswith(" --json") else command + option


def _named(values: list[Undeclared]) -> str:
    parts = [f"{u.what} ({u.name})" for u in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def refused_sentence(values: list[Undeclared]) -> str:
    """A release refused because it would read ``values`` off the data, in one sentence (the app's words: the Data
    page and the boxes above, not the command line's options)."""
    one = len(values) == 1
    return (f"This release would read {_named(values)} off the data, which epsilon does not cover, so nothing was "
            f"drawn or charged: declare {'it' if one else 'them'} on the Data page, or tick "
            f"{'its box' if one else 'their boxes'} above to publish {'it' if one else 'them'} as read (the release is "
            "then not DP as run).")


def accept_boxes(plan: Plan, key: str) -> tuple[tuple[str, ...], list[Undeclared]]:
    """Before the Release button: the public values ``plan`` would read off the data (:func:`undeclared` of its
    disclosures), each with a box that publishes it as read. Returns (the ticked names, the values neither declared
    nor ticked)."""
    values = undeclared(plan.disclosures)
    if not values:
        return (), []
    st.markdown("**Read off the data** (declare these on the Data page; epsilon does not cover a value read off the "
                "data):")
    ticked: list[str] = []
    for u in values:
        # a widget's label and help are Markdown, and u.name / u.what can name an uploaded column
        if st.checkbox(f"Publish {markdown_literal(u.name)} as read off the data (the release is then not DP as run)",
                       key=f"accept-{key}-{u.name}",
                       help=f"{markdown_literal(u.what[0].upper() + u.what[1:])} would be read off the data and "
                            "published as read: the "
                            "record and this data set's ledger then say the release is not DP as run. Declaring it on "
                            "the Data page from the study design keeps the guarantee."):
            ticked.append(u.name)
    return tuple(ticked), [u for u in values if u.name not in ticked]


def stored_match(plan: Plan, inputs: dict[str, Any] | None) -> Released | None:
    """The latest release of this data set in the ledger whose plan (mechanism, epsilon, grid, groups, horizon,
    options: the release part of its public inputs) is ``inputs``', as a :class:`Released` read from its record; None
    when there is none (or the plan's record kind holds no curve counts)."""
    from dpsurv_core.privacy.release import stored_release
    from dpsurv_core.publication.reading import READABLE, find_release

    if inputs is None or plan.kind not in READABLE or not plan.fingerprint:
        return None
    found = find_release(session.store().records(plan.fingerprint), inputs)
    return None if found is None else stored_release(found, session.ledger())


def budget_refusal(plan: Plan) -> str | None:
    """Why the data set's budget cannot pay for ``plan`` now (the ledger's own sentence), or None when it can."""
    try:
        session.ledger().check(plan.ledger_entry())
    except BudgetExceededError as exc:
        return str(exc)
    except DpsurvError:
        return None  # a ledger problem: the release itself says so in one sentence
    return None


DEVIATION_BOX = ("Release it anyway: the ledger marks it as a deviation from the plan, and the reports show that mark")
APP_CONFIRMED = "in the app's confirmation box"


def plan_mark(plan: Plan) -> tuple[str, str] | None:
    """(status, note) of ``plan`` against the plan the data set's cap was set from (``budget set --plan``): "as
    planned: release K ..." or "deviation from plan: ..."; None when the cap came from no plan."""
    if not plan.fingerprint or plan.cost.epsilon is None:
        return None
    try:
        return adherence(session.store().records(plan.fingerprint), plan.entry.id, plan.cost.epsilon)
    except DpsurvError:
        return None  # a ledger problem: the release itself says so in one sentence


def confirm_lines(plan: Plan, accept: tuple[str, ...]) -> list[str]:
    """What the confirmation says: what is published, the cost, the budget left after it, the guarantee as run, and
    where the cap came from a plan, whether this release is one of its planned releases."""
    budget = session.ledger()
    eps = plan.cost.epsilon
    mech = plan.entry.name or plan.entry.id
    what = (f"**Published**: {plan.analysis or plan.entry.analysis} by {mech} on {plan.dataset}: the noisy output and "
            "the declared values its record lists (grid, groups, horizon, options); every number shown beside it is "
            "read from these alone. Nothing else leaves.")
    cost = f"**Cost**: {charge_phrase(plan.cost, False, plan.disclosures)}."
    if budget.cap is None:
        after = "**Budget after**: no cap is set for this data set (set one on the Ledger and report page)."
    elif eps is None:
        after = f"**Budget after**: unchanged ({budget.remaining():.3g} of the cap {budget.cap:.3g}): no epsilon."
    else:
        after = (f"**Budget after**: {max(budget.remaining() - eps, 0.0):.3g} of the cap {budget.cap:.3g} left "
                 f"(now {budget.remaining():.3g}).")
    guarantee = f"**Guarantee as run**: {charged_sentence(plan.cost, plan.disclosures)}"
    if accept:
        guarantee += (f"; not DP as run: {', '.join(accept)} published as read off the data (ticked above)")
    lines = [what, cost, after, guarantee + "."]
    mark = plan_mark(plan)
    if mark is not None:
        status, note = mark
        lines.append(f"**Plan**: {note[0].upper() + note[1:]}." if status == AS_PLANNED else
                     f"**Plan**: this would be a {note}.")
    return lines


def confirmed(plan: Plan, key: str, accept: tuple[str, ...], again: bool) -> bool:
    """The confirmation after a Release click: what will be published, the cost, the budget left after, the guarantee
    as run, and two buttons. True on the click that confirms; Cancel takes the box away."""
    with st.container(border=True):
        st.markdown("**Confirm this release**" + (" (another draw of a plan already released)" if again else ""))
        for line in confirm_lines(plan, accept):
            st.markdown(markdown_literal(line).replace("\\*\\*", "**"))
        mark = plan_mark(plan)
        deviating = mark is not None and mark[0] == DEVIATION
        ticked = deviating and st.checkbox(DEVIATION_BOX, key=f"deviate-{key}")
        yes, no = st.columns(2)
        eps = plan.cost.epsilon
        go = yes.button("Confirm: release" + ("" if eps is None else f" and charge epsilon {eps:.3g}"),
                        key=f"confirm-release-{key}", type="primary", disabled=deviating and not ticked,
                        help="A deviation from the plan is released only once its box above is ticked."
                        if deviating else None)
        if no.button("Cancel", key=f"cancel-release-{key}"):
            st.session_state.pop(f"pending-release-{key}", None)
            st.rerun()
    return go


def read_from_ledger(plan: Plan, key: str) -> bool:
    """The release :func:`release_button` shows for this plan was read from the ledger (made earlier, elsewhere)."""
    return plan_key(plan, key) in st.session_state.get("read_from_ledger", set())


def release_button(plan: Plan, key: str, label: str = "Release", inputs: dict[str, Any] | None = None
                   ) -> Released | None:
    """A button labelled ``label`` (it must begin with "Release") that releases ``plan`` through the protocol.

    Before it, every public value the plan would read off the data has a box (:func:`accept_boxes`): the button stays
    off, with one sentence naming them, until each is declared on the Data page or ticked; ticked ones are the plan's
    ``accept`` (the record says not DP as run). Returns the release made by this page for exactly this plan (kept in
    the session so that reruns keep showing it), or None. A refusal (a value read off the data, past the cap, a broken
    ledger, a server busy with other sessions' work: :mod:`dpsurv_app.capacity`) and any other problem are shown as one
    sentence; nothing is drawn or charged then.

    Release once, read many: where the ledger already holds a release of this plan (``inputs``: the public inputs its
    record would have; :func:`stored_match`), on any page or in an earlier visit, that release is read again and
    shown, with no new draw or charge; the button then offers another draw, charged again."""
    assert label.startswith("Release")
    made: dict[str, Released] = st.session_state.setdefault("released_by_page", {})
    read: set[str] = st.session_state.setdefault("read_from_ledger", set())
    pk = plan_key(plan, key)
    if pk not in made and plan.private:
        stored = stored_match(plan, inputs)
        if stored is not None:
            made[pk] = stored
            read.add(pk)
    if not plan.private:
        st.info("This mechanism adds no noise: its numbers are for your eyes only and cannot be released. To publish, "
                "choose a private mechanism above.")
        return None
    accept, missing = accept_boxes(plan, key)
    if missing:
        one = len(missing) == 1
        st.warning(f"Release is off: it would read {markdown_literal(_named(missing))} off the data; declare "
                   f"{'it' if one else 'them'} on the Data page, or tick {'its box' if one else 'their boxes'} above to "
                   f"publish {'it' if one else 'them'} as read.", icon=":material/block:")
    budget = session.ledger()
    left = "no cap set" if budget.cap is None else f"{budget.remaining():.3g} of the cap {budget.cap:.3g} left"
    charge = ("no epsilon: no formal guarantee" if plan.cost.epsilon is None  # disclosure control
              else f"charges epsilon {plan.cost.epsilon:.3g}")
    again = pk in made  # this exact plan is already released: another click is another release, charged again
    text = (f"Release again: a new draw, a new record ({charge} more)" if again else f"{label} ({charge})")
    refusal = budget_refusal(plan)
    if refusal:
        st.warning(f"Release is off: {markdown_literal(refusal)}", icon=":material/block:")
    pending_key = f"pending-release-{key}"
    if st.button(text, key=f"release-{key}", type="secondary" if again else "primary",
                 disabled=bool(missing) or bool(refusal),
                 help=f"Shows what would be published and charged, to confirm: a fresh draw, charged against this "
                      f"data set's budget ({left}); it gets a record id and can go into the report."
                      + (" The numbers shown now are the earlier release's; they stay in the ledger and its reports."
                         if again else "")):
        st.session_state[pending_key] = pk
    if st.session_state.get(pending_key) == pk and confirmed(plan, key, accept, again):
        st.session_state.pop(pending_key, None)
        try:
            with capacity.heavy(), st.spinner("Releasing: checking the budget, drawing fresh noise, recording the "
                                                  "charge..."):
                made[pk] = release(replace(plan, accept=accept, command=_with_accept(plan.command, accept),
                                           note=marked_note(plan)), session.store())
        except capacity.ServerBusy:  # no slot came free: release() never ran, so nothing drawn or charged
            st.error(capacity.BUSY, icon=":material/hourglass_top:")
            return None
        except UndeclaredValueError as exc:  # declared on no page and not ticked: nothing drawn, nothing charged
            st.error(markdown_literal(refused_sentence(exc.values)))
            return None
        except (BudgetExceededError, DpsurvError) as exc:
            st.error(markdown_literal(exc))
            return None
        except Exception as exc:  # never a traceback: the protocol recorded nothing (its transaction rolled back)
            st.error(f"The release failed ({type(exc).__name__}: {markdown_literal(exc)}), so nothing was recorded "
                     "or charged.")
            return None
        read.discard(pk)
        if not again:  # draw the page again so that the button already says what another click would do
            st.rerun()
    rel = made.get(pk)
    if rel is not None and pk in read:
        when = rel.entry.time.replace("T", " ")[:16] if rel.entry.time else "earlier"
        st.info(f"Reading release #{rel.record_id} (recorded {when} UTC, "
                f"{markdown_literal(charged_sentence(rel.entry.cost, rel.entry.disclosures))}): this plan was released "
                "before, so the numbers below are that release's, read again from its record. Nothing more is "
                "charged.", icon=":material/menu_book:")
        record_download(rel, key)
    elif rel is not None:
        st.success(f"Released as record {rel.record_id}: "
                   f"{markdown_literal(charged_sentence(rel.entry.cost, rel.entry.disclosures))}. "
                   "The numbers below marked "
                   "'released' are the published ones; the record is in the Ledger and report page.")
        for w in rel.warnings:  # the ledger's own sentences (no cap set): no label of the data in them
            st.warning(w)
        if (changed := reading_changed(rel.entry.command, plan.command)) is not None:
            st.info(changed)
        record_download(rel, key)
    return rel


def marked_note(plan: Plan) -> str:
    """The ledger note of an app release: the plan's mark (a deviation reaches here only confirmed, its box ticked)
    where the cap came from a plan, else the plan's own note."""
    if not plan.fingerprint or plan.cost.epsilon is None:
        return plan.note
    note = checked_note(session.store().records(plan.fingerprint), plan.entry.id, plan.cost.epsilon, True,
                        APP_CONFIRMED)
    return note or plan.note


def record_download(rel: Released, key: str) -> None:
    """The release as its record holds it (released, public inputs, derived, its cost and guarantee) as JSON: the
    file to publish, which holds no number the release did not publish."""
    if rel.publication is None:
        return
    from dpsurv_app.downloads import file_stem

    st.download_button("Release record as JSON", json.dumps(rel.publishable(), indent=2, allow_nan=False),
                       file_name=f"{file_stem(f'dpsurv-release-{rel.record_id}-{rel.entry.analysis}')}.json",
                       mime="application/json", key=f"release-json-{key}", on_click="ignore",
                       icon=":material/download:")


def _readings(command: str) -> dict[str, str]:
    """The reading options of a command line; the band type is R's default, log, when the command leaves it out."""
    return {"--conf-type": "log"} | dict(m.group(0).split() for m in READING_OPTIONS.finditer(command))


def reading_changed(recorded: str, now: str) -> str | None:
    """One sentence when the release is now read otherwise (band type, landmark or RMST times) than at the Release
    click, whose readings its record keeps; None when they agree."""
    before, after = _readings(recorded), _readings(now)
    if before == after:
        return None
    kept = []
    if before["--conf-type"] != after["--conf-type"]:
        kept.append(f"the {before['--conf-type']} band")
    if before.get("--landmarks") != after.get("--landmarks"):
        kept.append("the landmark times" if "--landmarks" in before else "no landmark times")
    if before.get("--rmst") != after.get("--rmst"):
        kept.append("the RMST time" if "--rmst" in before else "no RMST")
    said = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]
    return ("The numbers below are read off the same release with settings changed after the Release click (free "
            f"post-processing, no new charge), but its record and reports keep the click's readings: {said}. "
            "Recording these readings takes a new release: a fresh draw, charged again.")
