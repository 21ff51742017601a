"""Time-scaling profiles shared by the rules (plain Python)."""

from __future__ import annotations


def min_jerk(s: float) -> float:
    """``10 s^3 - 15 s^4 + 6 s^5`` on [0, 1] (clamped outside): zero velocity and acceleration at both
    ends. The OBSW's approach (seed 004 §V) and the nominal's re-basing ramp use it."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 + s * (-15.0 + 6.0 * s))
