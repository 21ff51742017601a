"""Seed 000 case 3 (HTV capture from Table 3, wires tightening) in the lockstep runner, on one core.

Prints the real-time factor (simulated s per CPU s, ``time.process_time``) of the whole run
(RKMK4 at the scenario's step: four derivative evaluations per step, each with Pinocchio's
forward kinematics, ABA and, in contact, the LEE Jacobian), beside the cost of one ``pin.aba``
call of the SSRMS so the Python overhead per step is visible. Target: >= 10x real time
(seed 002 asks for real-time simulation for operator training).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from hil_snare.runner import run
from hil_snare.scenario import load_snare_scenario

TARGET_RTF = 10.0


def _case3(dt_s: float, duration_s: float) -> float:
    sc = load_snare_scenario('htv_capture')
    system, ctrl, poses, x = sc.build()
    cpu0 = time.process_time()
    run(system, ctrl, poses, x, duration_s, dt_s, sc.control_period_s, record_every=50)
    return time.process_time() - cpu0


def main(duration_s: float = 10.0) -> None:
    sc = load_snare_scenario('htv_capture')
    system = sc.build()[0]
    cpu = _case3(sc.dt_s, duration_s)
    steps = duration_s / sc.dt_s
    q = np.radians([-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5])
    v = np.zeros(7)
    tau = np.zeros(7)
    n = 20000
    c0 = time.process_time()
    for _ in range(n):
        pin.aba(system.model, system.data, q, v, tau)
    aba_us = (time.process_time() - c0) / n * 1e6
    per_step_us = cpu / steps * 1e6
    rtf = duration_s / cpu
    print(f'case 3: {duration_s:.0f} s simulated at dt = {sc.dt_s * 1e3:g} ms in {cpu:.2f} s CPU: '
          f'real-time factor {rtf:.1f}x (target >= {TARGET_RTF:.0f}x) {"OK" if rtf >= TARGET_RTF else "MISSED"}')
    print(f'per step {per_step_us:.0f} us = 4 derivative evaluations; one pin.aba (SSRMS, 7 DOF) {aba_us:.1f} us '
          f'-> {4 * aba_us / per_step_us * 100:.0f} % of a step is ABA, the rest is Python (contact geometry, RKMK4)')
    # the case study's step (its hard contact needs 2 ms; case 3 is within 0.0006 mm of 0.25 ms at 4 ms,
    # docs/snare.md step-size study), for comparison
    cpu2 = _case3(2e-3, duration_s)
    print(f'case 3 at dt = 2 ms (the case study\'s step): real-time factor {duration_s / cpu2:.1f}x')


if __name__ == '__main__':
    main()
