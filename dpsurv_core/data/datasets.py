"""Bundled survival data sets, extracted once from the R packages survival and MASS.

Each keeps R's column names and codes (lung's status is recoded from 1/2 to 0/1). Files live in
``dpsurv_core/data`` so the app and the tests work offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from dpsurv_core.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

    from dpsurv_core.data.labels import ValueLabels

SURVIVAL = "R package survival (Therneau); licence LGPL (>= 2)"
MASS = "R package MASS (Venables and Ripley); licence GPL-2 | GPL-3"


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str
    source: str
    time: str
    event: str
    time_unit: str
    groups: tuple[str, ...] = ()
    covariates: tuple[str, ...] = ()
    event_codes: tuple = (1,)
    censor_codes: tuple = (0,)
    event_type: str | None = None
    event_types: dict = field(default_factory=dict)
    id: str | None = None
    rows_per_subject: int = 1
    notes: str = ""
    # public bounds of numeric covariates, declared from what each variable is (ECOG 0 to 5, Karnofsky 0 to 100) and
    # whom the study enrolled (adults; flchain: residents aged 50 or more), never from the data: the app's default
    # covariate ranges for a bundled data set, as its published size is the default n
    bounds: dict = field(default_factory=dict)

    @property
    def path(self):
        return resources.files("dpsurv_core") / "data" / "bundled" / f"{self.name}.csv"

    @property
    def labels(self) -> ValueLabels:
        """The R documentation's value labels, column kinds and descriptions (:mod:`dpsurv_core.data.labels`)."""
        from dpsurv_core.data.labels import bundled

        return bundled(self.name)


DATASETS: dict[str, DatasetInfo] = {
    d.name: d
    for d in [
        DatasetInfo("lung", "NCCTG advanced lung cancer", SURVIVAL + "; R name cancer/lung", "time", "status", "days",
                    ("sex", "ph.ecog", "inst"), ("age", "sex", "ph.ecog", "ph.karno", "pat.karno", "meal.cal", "wt.loss"),
                    notes="status recoded from 1 = censored / 2 = dead to 0 / 1.",
                    bounds={"age": (18.0, 100.0), "ph.ecog": (0.0, 5.0), "ph.karno": (0.0, 100.0),
                            "pat.karno": (0.0, 100.0)}),
        DatasetInfo("kidney", "Recurrence of infection in kidney patients on dialysis", SURVIVAL, "time", "status", "days",
                    ("sex", "disease"), ("age", "sex", "frail"), id="id", rows_per_subject=2,
                    notes="Two rows (recurrence times) per patient: the privacy unit is the patient (id).",
                    bounds={"age": (0.0, 100.0)}),
        DatasetInfo("leukemia", "Acute myelogenous leukemia maintenance (aml)", SURVIVAL, "time", "status", "weeks",
                    ("x",), ()),
        DatasetInfo("gehan", "Gehan's remission times, 6-MP vs control", MASS, "time", "cens", "weeks",
                    ("treat",), ("treat",), notes="Subjects come in matched pairs (column pair); cens = 1 is a relapse."),
        DatasetInfo("mgus2", "Monoclonal gammopathy (MGUS), Mayo Clinic", SURVIVAL, "futime", "death", "months",
                    ("sex",), ("age", "sex", "hgb", "creat", "mspike"), id="id",
                    notes="Progression (pstat, ptime) is a competing event in R's multi-state analyses.",
                    bounds={"age": (18.0, 110.0)}),
        DatasetInfo("myeloid", "Acute myeloid leukemia trial", SURVIVAL, "futime", "death", "days",
                    ("trt", "sex", "flt3"), ("trt", "sex", "flt3"), id="id"),
        DatasetInfo("ovarian", "Ovarian cancer trial", SURVIVAL, "futime", "fustat", "days",
                    ("rx", "resid.ds", "ecog.ps"), ("age", "rx", "resid.ds", "ecog.ps"),
                    bounds={"age": (18.0, 100.0), "ecog.ps": (0.0, 5.0)}),
        DatasetInfo("stanford2", "Stanford heart transplant (second version)", SURVIVAL, "time", "status", "days",
                    (), ("age", "t5"), id="id", notes="t5 (T5 mismatch score) is missing for 27 subjects.",
                    bounds={"age": (0.0, 100.0)}),
        DatasetInfo("veteran", "Veterans' Administration lung cancer trial", SURVIVAL, "time", "status", "days",
                    ("trt", "celltype", "prior"), ("trt", "karno", "diagtime", "age", "prior"),
                    bounds={"age": (18.0, 100.0), "karno": (0.0, 100.0)}),
        DatasetInfo("pbc", "Mayo Clinic primary biliary cholangitis", SURVIVAL, "time", "status", "days",
                    ("sex", "trt", "edema", "stage"), ("age", "sex", "bili", "albumin", "protime", "edema"),
                    event_codes=(2,), censor_codes=(0, 1), event_type="status", event_types={1: "transplant", 2: "death"},
                    id="id", notes="status 0 censored, 1 transplant, 2 death; for survival, transplant is censored. trt is missing for the 106 patients outside the randomised trial.",
                    bounds={"age": (18.0, 100.0)}),
        DatasetInfo("transplant", "Liver transplant waiting list", SURVIVAL, "futime", "event", "days",
                    ("sex", "abo"), ("age", "sex", "abo", "year"),
                    event_codes=("death",), censor_codes=("censored", "ltx", "withdraw"), event_type="event",
                    event_types={"death": "death", "ltx": "ltx", "withdraw": "withdraw"},
                    notes="event: censored, death, ltx (transplanted), withdraw; 4 subjects have futime 0.",
                    bounds={"age": (0.0, 100.0)}),
        DatasetInfo("flchain", "Serum free light chain (Olmsted County)", SURVIVAL, "futime", "death", "days",
                    ("sex", "flc.grp", "mgus"), ("age", "sex", "kappa", "lambda", "creatinine", "mgus"),
                    notes="3 subjects have futime 0.", bounds={"age": (50.0, 110.0)}),
    ]
}


def names() -> list[str]:
    return list(DATASETS)


def info(name: str) -> DatasetInfo:
    try:
        return DATASETS[name]
    except KeyError:
        raise DataError(f"There is no bundled data set called {name!r}: choose one of {', '.join(DATASETS)}.") from None


@cache
def _load(name: str) -> pd.DataFrame:
    import pandas as pd

    with info(name).path.open("rb") as fh:
        return pd.read_csv(fh)


def published_size(name: str) -> int:
    """Number of subjects in the published data set (public: documented with the R package)."""
    d = info(name)
    table = _load(name)
    return int(table[d.id].nunique()) if d.id else int(len(table))


def load(name: str) -> pd.DataFrame:
    """A fresh copy of a bundled table, exactly as shipped."""
    return _load(name).copy()
