"""Least-squares non-decreasing fits (isotonic regression) of many short rows, bit for bit as SciPy computes them.

:func:`isotonic_rows` is ``scipy.optimize.isotonic_regression(row).x`` for every row, with the same floating-point
operations in the same order: SciPy's pool-adjacent-violators routine (Busing 2022, "Monotone Regression: A Simple
and Fast O(n) PAVA Implementation", J. Stat. Softw. 102(1), algorithm 1, with its ``>=`` for pooling equal
neighbours) on unit case weights, run on Python floats (IEEE doubles, as SciPy's C++ runs it).
``tests/curves/test_isotonic.py`` checks the fits against SciPy's byte for byte.

Why not SciPy: laplace-counts' reading pools the running sums of a few hundred rows of about twenty bins in every
bootstrap of every release (:func:`dpsurv_core.curves.clamping.monotone_increments`). Called row by row, SciPy's
routine and the small NumPy arrays around it (argument checks, result objects) were about four fifths of that
work, half of a simulated release's time in the planner (:mod:`dpsurv_core.planning.evaluate`); here the pooling
costs about 4 microseconds a row, and ``scipy.optimize`` (a third of a second to import) is not imported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pava(y: list[float]) -> list[float]:
    """The non-decreasing least-squares fit of ``y`` (unit weights), as SciPy's ``pava`` computes it (module
    docstring). A value not pooled yet has weight 1, so its products ``w * x`` are written ``1.0 * x``. The fit is
    ``y`` except over the pooled blocks, so each pooled block is written over its range when it is saved (a block
    pooled again later is written again over its wider range, and the last write of a value is its block's). ``y``
    is overwritten (the caller passes a copy)."""
    n = len(y)
    out = y[:]
    x = y  # block values (SciPy's x, overwritten from the left as blocks form)
    w = [1.0] * n  # block weights
    r = list(range(n + 1))  # block starts (the first block, y[0] alone, ends at 1)
    b = 0
    xb_prev, wb_prev = (x[0], 1.0) if n else (0.0, 1.0)
    i = 1
    while i < n:
        b += 1
        xb = x[i]
        if xb_prev >= xb:  # a down violation: pool with the previous block
            b -= 1
            sb = wb_prev * xb_prev + 1.0 * xb
            wb = 1.0 + wb_prev
            xb = sb / wb
            while i < n - 1 and xb >= x[i + 1]:  # pool the next values while they are not above
                i += 1
                sb += 1.0 * x[i]
                wb += 1.0
                xb = sb / wb
            while b > 0 and x[b - 1] >= xb:  # pool the previous blocks while they are not below
                b -= 1
                sb += w[b] * x[b]
                wb += w[b]
                xb = sb / wb
            x[b] = xb_prev = xb
            w[b] = wb_prev = wb
            r[b + 1] = i + 1
            out[r[b]:i + 1] = [xb] * (i + 1 - r[b])
        else:  # a block of one value
            x[b] = xb_prev = xb
            w[b] = wb_prev = 1.0
            r[b + 1] = i + 1
        i += 1
    return out


def isotonic_rows(values: np.ndarray, lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """Row k's fit over its first ``lengths[k]`` values (``values`` (N, L)), 0 after them: each row's
    ``scipy.optimize.isotonic_regression(values[k, :lengths[k]]).x`` (module docstring)."""
    values = np.asarray(values, float)
    width = values.shape[-1]
    pad = [0.0] * width
    flat: list[float] = []
    for row, m in zip(values.tolist(), np.asarray(lengths, int).tolist()):
        flat += _pava(row[:m])
        flat += pad[m:]
    return np.array(flat, float).reshape(values.shape)
