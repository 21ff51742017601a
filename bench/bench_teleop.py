"""Seed 001 teleoperation rules: wall time per call, and the lockstep real-time factor.

Targets (controller period of the scenario, 2 ms; the seed's virtual environment ran at
1 ms/loop): slave law Eq. (3) and one virtual-environment step (Eqs. 4-10) each <= 50 us
median, so a node keeps up with 1 kHz with margin; the whole lockstep loop (earth + link +
orbit + payload admittance) at least 5x faster than real time at 500 Hz.
"""

import time

import numpy as np

from hil_bringup.runners.teleop_experiments import hils2
from hil_teleop.config import TeleopConfig
from hil_teleop.delay_line import DelayLine
from hil_teleop.gains import TeleopGains
from hil_teleop.slave_law import SlaveLaw
from hil_teleop.virtual import VirtualContact, VirtualEnvironment, VirtualPayload

N = 20_000
TARGET_US = 50.0


def timed(fn, n=N):
    for _ in range(500):
        fn()
    samples = np.empty(n)
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        fn()
        samples[i] = clock() - t0
    return np.percentile(samples * 1e-3, [50, 99])


def line(name, med, p99, target=TARGET_US):
    print(f'  {name:<44s} median {med:6.1f} us   p99 {p99:6.1f} us   '
          f'(target median <= {target:.0f} us: {"met" if med <= target else "MISSED"})')


def main() -> None:
    gains = TeleopGains()
    law = SlaveLaw(gains)
    f_m, x_vir, x_s, f_s = (np.array([1.0, 0.1, 0, 0, 0, 0.01]), np.array([1.01, 0, 0.5, 0.01, 0.02, 0.03]),
                            np.array([1.0, 0, 0.5, 0, 0, 0]), np.array([2.0, 0, 0, 0, 0, 0.1]))
    print('seed 001 teleoperation rules:')
    line('slave law, Eq. (3)', *timed(lambda: law.command(f_m, x_vir, x_s, f_s)))
    env = VirtualEnvironment(gains, VirtualPayload(4500.0, [4875.0, 4875.0, 3000.0]),
                             VirtualContact([2e4] * 3 + [2e3] * 3, [2e2] * 3 + [2e1] * 3), 0.002)
    line('virtual arm + payload step, Eqs. (4)-(10)', *timed(lambda: env.step(f_m)))
    dl = DelayLine(5.0, capacity=10_000)
    state = {'t': 0.0}

    def link():
        state['t'] += 0.002
        dl.send(state['t'], f_m)
        dl.receive(state['t'])
    line('delay line send + receive (5 s in flight)', *timed(link), target=10.0)
    config = TeleopConfig(payload_mass_kg=4500.0, delay_s=5.0)
    t0 = time.perf_counter()
    run = hils2(config)
    wall = time.perf_counter() - t0
    sim = run.t[-1] + config.dt
    factor = sim / wall
    print(f'  lockstep HILS 2 (4500 kg, 5 s delay), {sim:.0f} s simulated at {1 / config.dt:.0f} Hz: '
          f'{wall:.1f} s wall, {1e6 * wall / len(run.t):.0f} us/step, real-time factor {factor:.1f}x '
          f'(target >= 5x: {"met" if factor >= 5 else "MISSED"})')


if __name__ == '__main__':
    main()
