"""Pinocchio's ``aba`` on the 7-DOF LBR iiwa 14 free-flyer servicer: the yardstick every
rule benchmark prints beside its own figure, measured in the same run so that the machine's
load cancels out of the ratio (issue 17)."""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from hil_dynamics.models import servicer_lbr_urdf


def aba_us(calls: int = 20_000, chunk: int = 50) -> float:
    """Median wall time [us] of one ``pin.aba`` call (chunks of ``chunk`` calls, random states)."""
    model = pin.buildModelFromXML(servicer_lbr_urdf(), pin.JointModelFreeFlyer())
    model.gravity = pin.Motion.Zero()
    data = model.createData()
    rng = np.random.default_rng(0)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    aba = pin.aba
    for _ in range(1000):
        aba(model, data, q, v, tau)
    samples = np.empty(calls // chunk)
    clock = time.perf_counter_ns
    for i in range(samples.size):
        t0 = clock()
        for _ in range(chunk):
            aba(model, data, q, v, tau)
        samples[i] = (clock() - t0) / chunk
    return float(np.median(samples) * 1e-3)


def aba_cpu_us(calls: int = 20_000) -> float:
    """Mean process CPU time [us] of one ``pin.aba`` call (for the CPU-time real-time factors)."""
    model = pin.buildModelFromXML(servicer_lbr_urdf(), pin.JointModelFreeFlyer())
    data = model.createData()
    q, v, tau = pin.neutral(model), np.full(model.nv, 0.1), np.full(model.nv, 0.2)
    t0 = time.process_time()
    for _ in range(calls):
        pin.aba(model, data, q, v, tau)
    return (time.process_time() - t0) / calls * 1e6


def ratio(us: float, aba: float) -> str:
    return f'{us / aba:.1f}x aba'
