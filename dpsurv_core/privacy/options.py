"""One specification per mechanism option: the command line's flags and the pages' widgets are both made from it.

A catalogue entry lists the options it takes with their defaults (``Entry.options``); :data:`OPTIONS` says, for each
option name, what kind of value it is, its bounds and its words. ``Option.parse`` is the command line's argparse type
and the bounds are the widget's, so a flag and a widget can never disagree on what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpsurv_core.errors import ParameterError


@dataclass(frozen=True)
class Option:
    """A mechanism option: ``kind`` is "float", "int" or "choice"; numbers lie in [low, high] (``high`` None: no upper
    bound on the command line, ``widget_high`` on a page); ``label`` names it on a page, ``help`` says what it does."""

    name: str
    kind: str
    label: str
    help: str
    low: float | None = None
    high: float | None = None
    step: float = 1.0
    widget_high: float | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    group: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> Any:
        """The value of ``text`` (the command line's words), checked against the bounds."""
        if self.kind == "choice":
            if text not in self.choices:
                raise ParameterError(f"{self.flag} takes one of {', '.join(self.choices)}, got {text!r}")
            return text
        try:
            value: float = int(text) if self.kind == "int" else float(text)
        except ValueError:
            raise ParameterError(f"{self.flag} takes {'a whole number' if self.kind == 'int' else 'a number'}, got "
                                 f"{text!r}") from None
        if not math.isfinite(value) or (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):
            raise ParameterError(f"{self.flag} must be {self.bounds_words()}, got {text}")
        return value

    def bounds_words(self) -> str:
        low = "" if self.low is None else f"{self.low:g}"
        if self.high is None:
            return f"at least {low}" if low else "a finite number"
        return f"between {low} and {self.high:g}"

    def widget(self, default: Any) -> Widget:
        """The page's widget for this option, seeded with ``default`` (the catalogue entry's): the command line's
        bounds, ``widget_high`` standing in for an open upper bound (a number box needs one to step towards)."""
        if self.kind == "choice":
            if default not in self.choices:
                raise ParameterError(f"The default of {self.name} ({default!r}) is not one of {self.choices}")
            return Widget(self.name, "choice", self.label, self.help, default, choices=self.choices)
        number = int if self.kind == "int" else float
        high = self.high if self.high is not None else self.widget_high
        low, high = (None if b is None else number(b) for b in (self.low, high))
        value = number(default)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ParameterError(f"The default of {self.name} ({default}) lies outside its widget's bounds "
                                 f"[{low}, {high}]")
        return Widget(self.name, self.kind, self.label, self.help, value, low, high, number(self.step))


@dataclass(frozen=True)
class Widget:
    """What a page shows for an option: a number box in [low, high] moving by ``step`` (``kind`` "float" or "int",
    every number of that type, as a number box wants) or a choice among ``choices``; ``value`` is its start."""

    name: str
    kind: str
    label: str
    help: str
    value: Any
    low: float | None = None
    high: float | None = None
    step: float = 1
    choices: tuple[str, ...] = ()

    def read(self, value: Any) -> Any:
        """The widget's ``value`` as the option takes it (a number box may hand back a float for a whole number)."""
        if self.kind == "choice":
            return value
        return int(value) if self.kind == "int" else float(value)


TIME_INDEXED = "time-indexed (Veeraragavan et al. 2024)"
DISCLOSURE = "disclosure control (no formal guarantee)"

OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("alpha", "float", "Decay alpha", "Later grid points get less noise: step i spends e(1 + alpha i).",
           0.0, None, 0.1, widget_high=5.0, group=TIME_INDEXED),
    Option("tau_start", "float", "Clip at start (tau start)", "Clipping threshold at the start of the grid.",
           0.0, 1.0, 0.05, group=TIME_INDEXED),
    Option("tau_end", "float", "Clip at end (tau end)", "Clipping threshold at the end of the grid.", 0.0, 1.0, 0.05,
           group=TIME_INDEXED),
    Option("window", "int", "Smoothing window (grid points)", "Rolling-mean window in grid points.", 1, None, 1,
           widget_high=15, group=TIME_INDEXED),
    Option("edge_mode", "choice", "Smoothing at the edges",
           "mean: average of the values in the window; as-published: the paper divides by the full window even at "
           "the ends.", choices=("mean", "as-published"), group=TIME_INDEXED),
    Option("threshold", "int", "Smallest count shown (threshold)",
           "Counts from 1 to threshold - 1 are withheld and shown as '<threshold'; the usual rule is 5 or 10.",
           2, None, 1, widget_high=100, metavar="K", group=DISCLOSURE),
    Option("base", "int", "Rounding base", "Every count is rounded to a multiple of this number (often 5 or 10).",
           2, None, 1, widget_high=100, metavar="B", group=DISCLOSURE),
    Option("k", "int", "Events per step (k)",
           "Adjacent time bins are merged until each step of the curve holds at least k events.", 2, None, 1,
           widget_high=100, metavar="K", group=DISCLOSURE),
)}


def takers(name: str, family: str) -> list[str]:
    """The catalogue ids of ``family`` whose entries take option ``name``."""
    from dpsurv_core.privacy import catalogue

    return [i for i in catalogue.ids(family) if name in catalogue.get(family, i).options]


def defaults(name: str, family: str) -> Any:
    """The option's default as the entries that take it declare it (they agree: a test checks)."""
    from dpsurv_core.privacy import catalogue

    values = {repr(catalogue.get(family, i).options[name]) for i in takers(name, family)}
    if len(values) != 1:
        raise ParameterError(f"The catalogue's entries disagree on the default of {name}: {sorted(values)}")
    return catalogue.get(family, takers(name, family)[0]).options[name]


def widgets(options: Mapping[str, Any], skip: Sequence[str] = ()) -> list[Widget]:
    """A widget for each of a catalogue entry's ``options`` (name to default) that has a specification, in the entry's
    order, but those in ``skip``; the rest (declared group sizes, censoring shares) have inputs of their own."""
    return [OPTIONS[k].widget(v) for k, v in options.items() if k in OPTIONS and k not in skip]
