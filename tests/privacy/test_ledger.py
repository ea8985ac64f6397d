"""The privacy ledger: sequential and parallel composition, per-unit totals, the cap, JSON."""

from __future__ import annotations

import json
import math

import pytest

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.ledger import (
    ADD_REMOVE,
    APPROXIMATE_MCMC,
    CHANGE_LABEL,
    GROUP_LABEL,
    SUBJECT,
    Ledger,
    LedgerEntry,
    PrivacyCost,
)
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon


def entry(eps: float, key: str | None = None, protects: str = SUBJECT, delta: float = 0.0, **params) -> LedgerEntry:
    neighbouring = ADD_REMOVE if protects == SUBJECT else CHANGE_LABEL
    return LedgerEntry("laplace-counts", "km", "lung", {"grid": "0:1100:20", **params},
                       PrivacyCost(eps, delta, neighbouring, protects), parallel_key=key)


def test_empty_ledger():
    led = Ledger(cap=2.0)
    assert led.spent() == 0.0 and led.remaining() == 2.0 and led.totals() == {}
    assert Ledger().remaining() == math.inf


def test_sequential_composition_adds_epsilon_and_delta():
    led = Ledger()
    led.charge(entry(0.5))
    led.charge(entry(0.25, delta=1e-6))
    led.charge(entry(1.0, delta=1e-6))
    assert led.spent() == pytest.approx(1.75)
    assert led.totals()[SUBJECT]["delta"] == pytest.approx(2e-6)


def test_parallel_composition_over_disjoint_groups_takes_the_max():
    led = Ledger()
    for g, eps in (("1", 0.5), ("2", 0.8), ("3", 0.3)):
        led.charge(entry(eps, key="km-by-sex", group=g))
    assert led.spent() == pytest.approx(0.8)
    led.charge(entry(0.4))  # one more sequential release on everybody
    assert led.spent() == pytest.approx(1.2)
    for g in ("1", "2"):  # a second parallel block adds its own max
        led.charge(entry(0.6, key="logrank-by-sex", group=g))
    assert led.spent() == pytest.approx(1.8)
    assert len(led.entries) == 6


def test_totals_are_per_protected_unit():
    led = Ledger(cap=1.0)
    led.charge(entry(0.7))
    with pytest.raises(BudgetExceededError, match="allow-label-only"):  # not without the data holder's allowance
        led.charge(entry(0.9, protects=GROUP_LABEL))
    led.label_only_allowed = True
    led.charge(entry(0.9, protects=GROUP_LABEL))  # randomized response on the label: not a subject-level cost
    totals = led.totals()
    assert set(totals) == {SUBJECT, GROUP_LABEL}
    assert totals[SUBJECT]["epsilon"] == pytest.approx(0.7)
    assert totals[GROUP_LABEL]["epsilon"] == pytest.approx(0.9)
    assert led.spent() == pytest.approx(0.7) and led.remaining() == pytest.approx(0.3)
    assert led.spent(GROUP_LABEL) == pytest.approx(0.9) and led.remaining(GROUP_LABEL) == pytest.approx(0.1)
    # the cap holds per unit: a label-only release does not eat the subject's budget, and vice versa
    led.charge(entry(0.3))
    with pytest.raises(BudgetExceededError, match="left for the group label only"):
        led.charge(entry(0.2, protects=GROUP_LABEL))


def test_cap_refuses_a_release_with_a_clear_message_and_records_nothing():
    led = Ledger(cap=1.0)
    led.charge(entry(0.6))
    with pytest.raises(BudgetExceededError) as exc:
        led.charge(entry(0.5))
    msg = str(exc.value)
    assert "costs epsilon 0.5" in msg and "only 0.4 of the cap 1 is left" in msg
    assert "exceed the cap by 0.1." in msg and "Lower epsilon, or raise the cap to at least 1.1" in msg
    assert "`python -m dpsurv_core budget raise --data D --cap C --reason TEXT`." in msg
    assert "\n" not in msg
    assert len(led.entries) == 1 and led.spent() == pytest.approx(0.6)
    led.charge(entry(0.4))  # exactly up to the cap is allowed
    assert led.remaining() == pytest.approx(0.0)


def test_cap_counts_parallel_blocks_by_their_max():
    led = Ledger(cap=1.0)
    led.charge(entry(0.9, key="b", group="1"))
    assert not led.would_exceed(entry(0.9, key="b", group="2"))
    led.charge(entry(0.9, key="b", group="2"))
    assert not led.would_exceed(entry(1.0, key="b", group="3"))  # the block's max rises to the cap, not past it
    assert led.would_exceed(entry(1.1, key="b", group="3"))
    assert led.would_exceed(entry(0.2))


def test_invalid_cap_and_cost():
    for bad in (0, -1.0):
        with pytest.raises(ParameterError, match="budget cap"):
            Ledger(cap=bad)
    with pytest.raises(ParameterError):
        PrivacyCost(-0.1)
    with pytest.raises(ParameterError):
        PrivacyCost(float("nan"))
    with pytest.raises(ParameterError):
        PrivacyCost(1.0, delta=1.0)


def test_cost_sentence_says_what_is_protected_and_under_which_neighbours():
    s = PrivacyCost(0.5, 1e-5, ADD_REMOVE, SUBJECT, APPROXIMATE_MCMC).sentence()
    assert "epsilon = 0.5" in s and "delta = 1e-05" in s and "the subject" in s and ADD_REMOVE in s
    assert "approximate (MCMC)" in s


def test_json_round_trip():
    led = Ledger(cap=3.0)
    led.label_only_allowed = True
    led.charge(entry(0.5, key="blk", group="1", bins=20))
    led.charge(entry(0.7, key="blk", group="2", bins=20))
    led.charge(entry(0.2, protects=GROUP_LABEL))
    text = led.to_json()
    raw = json.loads(text)
    assert raw["cap"] == 3.0 and raw["totals"][SUBJECT]["epsilon"] == pytest.approx(0.7)
    assert raw["entries"][0]["cost"]["neighbouring"] == ADD_REMOVE
    back = Ledger.from_json(text)
    assert back.cap == 3.0 and len(back.entries) == 3 and back.label_only_allowed
    assert back.totals() == led.totals()
    assert [e.to_dict() for e in back.entries] == [e.to_dict() for e in led.entries]


def test_json_handles_numpy_parameters():
    import numpy as np

    led = Ledger()
    led.charge(entry(0.5, edges=np.array([0.0, 1.0]), bins=np.int64(2)))
    raw = json.loads(led.to_json())
    assert raw["entries"][0]["parameters"]["edges"] == [0.0, 1.0] and raw["entries"][0]["parameters"]["bins"] == 2


def test_mechanism_knows_its_cost():
    class Toy(Mechanism):
        name = "toy"
        analysis = "km"

        def __init__(self, eps: float) -> None:
            self.eps = check_epsilon(eps)

        @property
        def cost(self) -> PrivacyCost:
            return PrivacyCost(self.eps)

        def parameters(self) -> dict:
            return {"epsilon": self.eps}

    e = Toy(0.3).ledger_entry("lung", parallel_key="k")
    assert e.mechanism == "toy" and e.cost.epsilon == 0.3 and e.parallel_key == "k" and e.dataset == "lung"
    for bad in (0, -1, "x", float("nan")):
        with pytest.raises(ParameterError):
            check_epsilon(bad)
    assert check_epsilon(math.inf) == math.inf


def test_a_not_dp_disclosure_voids_the_guarantee_read_off_a_record():
    """Sample and aggregate with its block count read off the data is charged epsilon but guarantees nothing: the
    ledger table, the report and the pages read the record that way (the CLI prints the same words)."""
    from dpsurv_core.privacy.ledger import PrivacyCost, as_run

    cost = PrivacyCost(1.0)
    blocks = [{"parameter": "blocks", "message": "not DP: the number of blocks was derived from n.", "dp": False}]
    horizon = [{"parameter": "horizon", "message": "The horizon was read off the data.", "dp": True}]
    # a horizon read off the data keeps the guarantee for the noisy numbers, and the sentence says it is outside it
    assert as_run(cost, horizon) == {"guarantee": "exact", "protects": "the subject", "sentence": cost.sentence()
                                     + "; the horizon read off the data is published as read, outside this guarantee"}
    assert as_run(cost, [])["sentence"] == cost.sentence()
    voided = as_run(cost, horizon + blocks)
    assert voided["guarantee"] == "none: not differentially private (blocks read off the data)"
    assert voided["protects"] == "nothing formally (not differentially private as run)"
    assert voided["sentence"] == "not differentially private as run: the number of blocks was derived from n"
    assert as_run(PrivacyCost(float("inf")), blocks)["guarantee"] == PrivacyCost(float("inf")).guarantee


def test_charged_sentence_says_the_epsilon_and_that_a_not_dp_release_guarantees_nothing():
    from dpsurv_core.privacy.ledger import PrivacyCost, charged_sentence

    cost = PrivacyCost(1.0)
    assert charged_sentence(cost, []) == cost.sentence()
    blocks = [{"parameter": "blocks", "message": "not DP: the number of blocks was derived from n.", "dp": False}]
    assert charged_sentence(cost, blocks) == ("epsilon = 1, but not differentially private as run: the number of "
                                              "blocks was derived from n")
