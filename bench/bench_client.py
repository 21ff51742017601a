"""Client admittance step: median and p99 wall time of one step (issue 17 target <= 30 us
median, aim <= 5x Pinocchio's ``aba`` measured in the same run).

One step = RKMK4 integration of Eq. (4) + Eq. (11) (the rule's ``step``) plus the
Eq. (23) mapping to the orbit state, exactly what the client admittance node does per tick.
The readable reference step (``step_reference``) is timed beside the compiled one.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aba_reference import aba_us, ratio  # noqa: E402

from hil_bringup.scenario import load_scenario  # noqa: E402
from hil_dynamics.client import ClientAdmittance  # noqa: E402
from hil_dynamics.passivity import ClientPort  # noqa: E402
from hil_dynamics.se3 import transform_wrench  # noqa: E402

N_STEPS = 50_000
TARGET_US = 30.0


def _timed(step, n):
    samples = np.empty(n)
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        step()
        samples[i] = clock() - t0
    return samples * 1e-3


def main() -> None:
    scenario = load_scenario('envisat_capture')
    client = scenario.client
    wrench = transform_wrench(client.pose_sensor_in_client, np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3]))
    dt = 1.0 / scenario.admittance_hz
    aba = aba_us()
    print(f'client admittance step (Eq. 11 RKMK4 + Eq. 23 mapping); pin.aba (7-DOF free-flyer) {aba:.2f} us median:')
    for name, n in (('compiled', N_STEPS), ('reference', N_STEPS // 5)):
        rule = ClientAdmittance(client.body, client.twist_client_body_0)
        step = rule.step if name == 'compiled' else rule.step_reference

        def one():
            step(wrench, dt)
            rule.absolute()
        for _ in range(1000):
            one()
        us = _timed(one, n)
        median, p99 = np.percentile(us, [50, 99])
        verdict = (f'   (target median <= {TARGET_US:.0f} us: {"met" if median <= TARGET_US else "MISSED"}; aim <= 5x aba; '
                   f'real-time factor at {scenario.admittance_hz:.0f} Hz: {1e6 / scenario.admittance_hz / median:.0f}x)')
        print(f'  {name:9s} median {median:6.1f} us ({ratio(median, aba)})   p99 {p99:6.1f} us   max {us.max():7.1f} us'
              + (verdict if name == 'compiled' else ''))
    # the step the nodes and runners run at the port (hil_dynamics.passivity.ClientPort): the
    # observer and the controller around it, with a measured twist, as the fused hot path does
    rule = ClientAdmittance(client.body, client.twist_client_body_0)
    port = ClientPort(rule, 100.0, enabled=True)
    measured = np.array([1e-4, -2e-4, 1e-4, 1e-5, 0.0, -1e-5])

    def with_port():
        port.step(wrench, dt, measured)
        rule.absolute()
    for _ in range(1000):
        with_port()
    us = _timed(with_port, N_STEPS // 5)
    median, p99 = np.percentile(us, [50, 99])
    print(f'  with port median {median:6.1f} us ({ratio(median, aba)})   p99 {p99:6.1f} us   max {us.max():7.1f} us'
          f'   (ClientPort: the passivity observer/controller and the integration energy around the step)')


if __name__ == '__main__':
    main()
