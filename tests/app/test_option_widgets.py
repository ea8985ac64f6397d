"""The curve pages' option widgets are made from the options' one specification (``dpsurv_core.privacy.options``),
as the command line's flags are: the same label, help and bounds, seeded with the catalogue entry's default."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.options import OPTIONS

OWN_INPUTS = {"base_epsilon", "sample_size", "censoring"}  # the time-indexed band's inputs of their own


def _every_entrys_widgets() -> None:
    from dpsurv_app import curves_view as cv
    from dpsurv_core.privacy import catalogue

    for entry in catalogue.entries(catalogue.CURVES):
        cv.option_widgets(entry, entry.id)


def test_every_option_a_curve_entry_takes_has_a_spec():
    for entry in catalogue.entries(catalogue.CURVES):
        assert set(entry.options) - OWN_INPUTS <= set(OPTIONS), entry.id


def test_the_widgets_use_the_specs_label_help_and_bounds():
    at = AppTest.from_function(_every_entrys_widgets, default_timeout=30).run()
    assert not at.exception, [e.message for e in at.exception]
    numbers = {w.key: w for w in at.number_input}
    radios = {w.key: w for w in at.radio}
    expected = set()
    for entry in catalogue.entries(catalogue.CURVES):
        for name, default in entry.options.items():
            if name in OWN_INPUTS:
                continue
            spec, key = OPTIONS[name], f"{entry.id}_opt_{name}"
            expected.add(key)
            if spec.kind == "choice":
                w = radios[key]
                assert (w.label, w.help, tuple(w.options), w.value) == (spec.label, spec.help, spec.choices, default)
                continue
            w = numbers[key]
            high = spec.high if spec.high is not None else spec.widget_high
            assert (w.label, w.help) == (spec.label, spec.help), key
            assert (w.min, w.max, w.step, w.value) == (spec.low, high, spec.step, default), key
    assert set(numbers) | set(radios) == expected  # no widget for an option without a spec, none left out
