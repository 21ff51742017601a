"""``hil_common.finite.all_finite`` against NumPy's ``isfinite(...).all()`` (the independent reference),
on random vectors seeded with the values that make the sum shortcut wrong if it stood alone: finite
values whose sum overflows, infinities of both signs (whose sum is NaN) and NaN."""

import numpy as np
import pytest

from hil_common.finite import all_finite

SPECIAL = [np.inf, -np.inf, np.nan, 1.7e308, -1.7e308, 5e-324, 0.0, -0.0]


def test_all_finite_is_numpy_s_isfinite_all_on_arrays_tuples_and_lists():
    rng = np.random.default_rng(17)
    for n in (0, 1, 3, 6, 7, 12):
        for _ in range(400):
            v = rng.normal(size=n) * 10.0 ** rng.integers(-3, 300)
            for i in range(n):
                if rng.random() < 0.3:
                    v[i] = SPECIAL[rng.integers(len(SPECIAL))]
            expected = bool(np.isfinite(v).all())
            assert all_finite(v) is expected, v
            assert all_finite(tuple(v.tolist())) is expected, v
            assert all_finite(v.tolist()) is expected, v


@pytest.mark.parametrize('values', [[1.7e308, 1.7e308], (-1.7e308, -1.7e308, 1.0), np.array([1e308] * 7)])
def test_finite_values_whose_sum_overflows_are_finite(values):
    assert not np.isfinite(sum(np.asarray(values, dtype=float).tolist()))
    assert all_finite(values)


def test_infinities_that_cancel_in_the_sum_are_not_finite():
    assert not all_finite([np.inf, -np.inf])          # their sum is NaN: caught by the shortcut too
    assert not all_finite(np.array([1e308, 1e308, np.inf]))
    assert not all_finite(np.array([[1.0, np.nan], [0.0, 0.0]]))   # any shape: ravelled
