"""One finiteness check for the samples a node or a runner takes at its control rate. Plain Python.

``numpy.isfinite(a).all()`` costs two NumPy calls (about 3 us on a 1 kHz path). The sum of the values
is finite exactly when every value is, except when finite values overflow it; only then is each value
looked at. So the common case costs one ``tolist`` and one ``sum``.
"""

from __future__ import annotations

import math

import numpy as np


def all_finite(values) -> bool:
    """Whether every value of ``values`` (a 1-D array or a sequence of numbers) is finite."""
    if type(values) is np.ndarray:
        values = values.ravel().tolist()
    return math.isfinite(sum(values)) or all(math.isfinite(v) for v in values)
