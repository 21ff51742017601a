"""Seed 001's experiments as lockstep runs (issue 7 items 1-5), shared by tests, demo and plots.

Seed 001 does not print its Tables 1-3 (payload inertia, gains), so :class:`TeleopConfig`'s
defaults are our stand-ins; the operator of HILS 2 (seed Fig. 15) is scripted as x-axis
pulls of a human-like smooth shape. Every experiment returns :class:`TeleopRun` records.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hil_bringup.runners.teleop import run_teleop
from hil_teleop.config import TeleopConfig, TeleopRun
from hil_teleop.gains import TeleopGains
from hil_teleop.master import ScriptedOperator

X = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
STEP_START_S = 1.0


def with_gains(config: TeleopConfig, **switches) -> TeleopConfig:
    return dataclasses.replace(config, gains=dataclasses.replace(config.gains, **switches))


def step_pull(config: TeleopConfig, v_ref: float = 0.01, duration_s: float = 25.0,
              pull_s: float | None = None) -> TeleopRun:
    """HIL validity / with-without feedback runs: a step ``v_s,r = v_ref`` along x at 1 s (seed Figs. 8-11)."""
    end = STEP_START_S + (pull_s if pull_s is not None else duration_s + 1.0)
    op = ScriptedOperator.velocity_steps([(STEP_START_S, end, v_ref * X)], config.gains.k_s, config.gains.g)
    return run_teleop(config, op, duration_s)


# HILS 2 (seed Figs. 14-17): operator pulls along x [start, end, v_ref], raised-cosine edges.
HILS2_PULLS = ((2.0, 22.0, 0.015), (27.0, 37.0, 0.02), (42.0, 52.0, -0.01))
HILS2_RAMP_S = 2.0


def hils2_operator(gains: TeleopGains) -> ScriptedOperator:
    return ScriptedOperator.velocity_steps([(a, b, v * X) for a, b, v in HILS2_PULLS], gains.k_s, gains.g,
                                           ramp_s=HILS2_RAMP_S)


def hils2(config: TeleopConfig, settle_s: float = 13.0) -> TeleopRun:
    """Delayed teleoperation with the scripted operator; runs until ``delay + settle`` after the last pull."""
    duration = HILS2_PULLS[-1][1] + config.delay_s + settle_s
    return run_teleop(config, hils2_operator(config.gains), duration)


@dataclasses.dataclass
class Hils2Agreement:
    """How well the virtual arm predicted the slave in a HILS 2 run (seed Figs. 16-17)."""

    max_position_error_m: float         # max |x_vir(t - t_delay) - x_s(t)| along x
    mean_abs_force_slave_n: float       # mean |f_s,x|
    mean_abs_force_virtual_n: float     # mean |f_vir,x|
    pull_mean_forces_n: list            # [(pull start [s], mean f_s,x, mean f_vir,x)] over each pull window


def hils2_agreement(run: TeleopRun) -> Hils2Agreement:
    """Virtual arm and slave aligned by the delay, compared along the pulls' axis x."""
    x_vir, x_s = run.aligned(run.x_vir, run.x_s)
    f_vir, f_s = run.aligned(run.f_vir, run.f_s)
    t_earth = run.t[: len(x_vir)]
    windows = []
    for start, _, _ in HILS2_PULLS:
        w = (t_earth >= start - 1.0) & (t_earth < start + 10.0)
        windows.append((start, float(f_s[w, 0].mean()), float(f_vir[w, 0].mean())))
    return Hils2Agreement(float(np.abs(x_vir[:, 0] - x_s[:, 0]).max()), float(np.abs(f_s[:, 0]).mean()),
                          float(np.abs(f_vir[:, 0]).mean()), windows)
