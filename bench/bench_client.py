"""Client admittance step: median and p99 wall time of one step (issue target <= 30 us median).

One step = RKMK4 integration of Eq. (4) + Eq. (11) (the rule's ``step``) plus the
Eq. (23) mapping to the orbit state, exactly what the client admittance node does per tick.
"""

import time

import numpy as np

from hil_bringup.scenario import load_scenario
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.se3 import transform_wrench

N_STEPS = 100_000
TARGET_US = 30.0


def main() -> None:
    scenario = load_scenario('envisat_capture')
    client = scenario.client
    rule = ClientAdmittance(client.body, client.twist_client_body_0)
    wrench = transform_wrench(client.pose_sensor_in_client, np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3]))
    dt = 1.0 / scenario.admittance_hz
    for _ in range(1000):
        rule.step(wrench, dt)
        rule.absolute()
    samples = np.empty(N_STEPS)
    clock = time.perf_counter_ns
    for i in range(N_STEPS):
        t0 = clock()
        rule.step(wrench, dt)
        rule.absolute()
        samples[i] = clock() - t0
    us = samples * 1e-3
    median, p99 = np.percentile(us, [50, 99])
    print(f'client admittance step (Eq. 11 RKMK4 + Eq. 23 mapping), {N_STEPS} steps:')
    print(f'  median {median:.1f} us   p99 {p99:.1f} us   max {us.max():.1f} us   '
          f'(target median <= {TARGET_US:.0f} us: {"met" if median <= TARGET_US else "MISSED"})')
    print(f'  real-time factor at {scenario.admittance_hz:.0f} Hz: {1e6 / scenario.admittance_hz / median:.1f}x')
