"""One writer of command-line words (:func:`dpsurv_core.privacy.release.option_words`) for the Python API's argv and
the app's reproduce commands (:func:`~dpsurv_core.privacy.release.cli_command`): each writes exactly what its former
copy wrote, so no record's ``command`` text changes, except a float whose six digits would not read back as it (a
stored command for epsilon 0.1234567 said 0.123457, which reruns a different release): that is written in full."""

from __future__ import annotations

import doctest
import math
import shlex
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.api._command import grid_text
from dpsurv_core.privacy import release
from dpsurv_core.privacy.release import cli_command, option_words


def api_words_before(options: Mapping[str, Any]) -> list[str]:
    """``dpsurv_core.api._command.argv_of`` as it was before the merge (the reference)."""
    def text(value: Any) -> str:
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float):
            return "inf" if math.isinf(value) and value > 0 else repr(value)
        if isinstance(value, (list, tuple)):
            return ",".join(text(v) for v in value)
        return str(value)

    words: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, Mapping):
            for column, values in value.items():
                words += [flag, f"{column}:" + (":" if name == "range" else ",").join(text(v) for v in values)]
        else:
            words += [flag, text(value)]
    return words


def cli_command_before(command: str, options: dict[str, Any]) -> str:
    """``dpsurv_core.privacy.release.cli_command`` as it was before the merge (the reference)."""
    parts = ["python", "-m", "dpsurv_core", command]
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            parts.append(flag)
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:g}"
        parts += [flag, str(value)]
    return shlex.join(parts) + " --json"


NAMES = st.sampled_from(["data", "group", "epsilon", "conf_type", "landmarks", "n_public", "accept_disclosure",
                         "base_epsilon", "json", "time_unit"])
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), FLOATS,
                    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
                    FLOATS.map(np.float64))
ITEMS = st.one_of(st.integers(-1000, 1000), FLOATS, st.text("abc xyz'=,", max_size=6))  # what lists hold
VALUES = st.one_of(SCALARS, st.lists(ITEMS, max_size=4), st.lists(ITEMS, max_size=4).map(tuple))
OPTIONS = st.dictionaries(NAMES, VALUES, max_size=6)


@given(OPTIONS, st.dictionaries(st.sampled_from(["categories", "range"]),
                                st.dictionaries(st.sampled_from(["age", "sex"]), st.lists(ITEMS, min_size=1, max_size=3),
                                                min_size=1, max_size=2), max_size=2))
def test_the_api_words_are_what_argv_of_wrote(options, repeated):
    options = {**options, **repeated}
    assert option_words(options) == api_words_before(
        {k: float(v) if type(v) is np.float64 else v for k, v in options.items()})  # np.float64: see below


def six_digits_exact(value: Any) -> bool:
    """Whether the former writer's ``:g`` (six significant digits) read back as the value (0.5, 1, 2, 0.1, 1100 ...)."""
    return not isinstance(value, float) or math.isnan(value) or float(f"{value:g}") == value


@given(st.sampled_from(["km", "logrank", "weibull", "regression"]), OPTIONS)
def test_the_reproduce_command_is_what_cli_command_wrote(command, options):
    """Byte for byte what the former writer wrote wherever its six digits were exact; else each float exact."""
    if all(six_digits_exact(v) for v in options.values()):
        assert cli_command(command, options) == cli_command_before(command, options)
    for name, value in options.items():
        if isinstance(value, float) and not math.isnan(value):
            assert float(option_words({name: value}, short_floats=True)[1]) == value


@given(st.floats(allow_nan=False, width=64))
def test_a_stored_command_reads_back_every_float(value):
    """The word a reproduce command writes for any float (infinities too) parses back to that float, and is the
    short ``:g`` form wherever that form is exact."""
    line = cli_command("km", {"epsilon": value})
    word = shlex.split(line)[shlex.split(line).index("--epsilon") + 1]
    assert float(word) == value
    if float(f"{value:g}") == value:
        assert word == f"{value:g}"


def test_a_stored_command_keeps_epsilon_0_1234567():
    """Six digits would store 0.123457, which reruns a different release."""
    assert cli_command("km", {"data": "lung", "epsilon": 0.1234567}) == (
        "python -m dpsurv_core km --data lung --epsilon 0.1234567 --json")
    assert cli_command("km", {"horizon": 1234567.0}) == "python -m dpsurv_core km --horizon 1234567.0 --json"


@pytest.mark.parametrize("command, options, line", [
    ("km", {"data": "lung", "group": "sex", "mechanism": "laplace-counts", "epsilon": 0.5},
     "python -m dpsurv_core km --data lung --group sex --mechanism laplace-counts --epsilon 0.5 --json"),
    ("km", {"data": "lung", "group": "sex", "horizon": 1100.0, "epsilon": 0.7, "seed": None, "rmst": False},
     "python -m dpsurv_core km --data lung --group sex --horizon 1100 --epsilon 0.7 --json"),
    ("weibull", {"data": "lung", "mechanism": "lsp-tll", "epsilon": 1},
     "python -m dpsurv_core weibull --data lung --mechanism lsp-tll --epsilon 1 --json"),
    ("regression", {"data": "my cohort.csv", "covariates": ["age", "sex"], "accept_disclosure": True},
     "python -m dpsurv_core regression --data 'my cohort.csv' --covariates age,sex --accept-disclosure --json"),
])
def test_pinned_reproduce_commands(command, options, line):
    """The lines the app's and report's tests pin, and a path with a space (shell-quoted)."""
    assert cli_command(command, options) == line


def test_api_floats_keep_full_precision_and_numpy_floats_are_plain_numbers():
    """The API writes floats in full precision, inf for no noise, and so does the reproduce command where six digits
    would change the release; a numpy float is written as its number (argv_of wrote ``np.float64(0.25)``, which no
    parser reads)."""
    assert option_words({"epsilon": 0.1234567891, "base_epsilon": math.inf, "rmst": np.float64(0.25)}) == [
        "--epsilon", "0.1234567891", "--base-epsilon", "inf", "--rmst", "0.25"]
    assert cli_command("km", {"epsilon": 0.1234567891}) == "python -m dpsurv_core km --epsilon 0.1234567891 --json"
    assert grid_text((0, 150, 5)) == "0.0:150.0:5" and grid_text("event-times") == "event-times"


def test_the_docstring_examples_run():
    for function in (release.option_words, release.cli_command):
        finder = doctest.DocTestFinder()
        runner = doctest.DocTestRunner()
        for test in finder.find(function, globs=vars(release)):
            runner.run(test)
        assert runner.failures == 0 and runner.tries > 0, function.__name__
