"""Motion-table IK step and MuJoCo lab-twin stepping: median/p99 wall times and real-time factors.

* IK step: one :meth:`MotionTable.step` (delay-compensation predictor, Cartesian speed
  limit, workspace check, IK seeded from the measured joints, joint limits) on a 6-D
  sinusoidal pose stream at 1 kHz, for the UR10e (Pinocchio DLS IK), the KR 120 R2500 pro
  and the hexapod (closed form); plus the hexapod's iterative FK used for monitoring.
  Target: p99 <= 1000 us, so the table fits the 1 kHz hot path (F/T -> admittance -> IK).
* Twin: wall time of one 1 ms physics step (commands, delay line, servo, MuJoCo step, F/T
  sampling) in lockstep, and the real-time factor (simulated / wall time).
  Target: real-time factor >= 1 (real-time capable), >= 5 for campaigns.
"""

import math
import time

import numpy as np

from hil_lab_twin.scene import TwinConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import home_pose, make_kinematics, sinusoid_pose
from hil_motion_table.table import MotionTable, TableLimits

N_IK = 5000
N_TWIN = 5000
IK_TARGET_US = 1000.0
AMPLITUDE = np.array([0.02, 0.015, 0.01, 0.03, 0.03, 0.04])
FREQUENCY = np.array([0.5, 0.4, 0.6, 0.5, 0.35, 0.45])


def _percentiles(samples_ns):
    us = np.asarray(samples_ns) * 1e-3
    return np.percentile(us, 50), np.percentile(us, 99)


def bench_ik(robot: str) -> None:
    kin = make_kinematics(robot)
    table = MotionTable(kin, TableLimits((-4.0,) * 3, (4.0,) * 3), period=0.001, prediction_horizon=0.02)
    table.initialize(kin.q_home)
    center = home_pose(kin)
    step_ns, fk_ns = np.empty(N_IK), np.empty(N_IK)
    clock = time.perf_counter_ns
    for k in range(N_IK):
        pose, _ = sinusoid_pose(k * 0.001, center, -AMPLITUDE, FREQUENCY, phase=np.full(6, math.pi / 2), offset=AMPLITUDE)
        q_measured = table.q_command
        t0 = clock()
        out = table.step(pose, q_measured=q_measured, t=k * 0.001)
        t1 = clock()
        table.measured_pose(out.q_command)
        fk_ns[k] = clock() - t1
        step_ns[k] = t1 - t0
    median, p99 = _percentiles(step_ns)
    fk_median, fk_p99 = _percentiles(fk_ns)
    faults = sum(table.stats.fault_counts.values())
    print(f'  {robot:14s} table step median {median:7.1f} us  p99 {p99:7.1f} us   '
          f'(target p99 <= {IK_TARGET_US:.0f} us: {"met" if p99 <= IK_TARGET_US else "MISSED"}); '
          f'FK of measured joints median {fk_median:6.1f} us p99 {fk_p99:6.1f} us; faults {faults}')


def bench_twin(label: str, config: TwinConfig) -> None:
    twin = LabTwin(config)
    robots = twin.position_robots
    q0 = {ns: twin.joint_state(ns).positions for ns in robots}
    twin.step(100)
    samples = np.empty(N_TWIN)
    clock = time.perf_counter_ns
    wall0 = clock()
    for k in range(N_TWIN):
        if k % 4 == 0:  # commands at 250 Hz, as over RSI
            for ns in robots:
                twin.command_positions(ns, q0[ns] + 0.01 * math.sin(2 * math.pi * 0.5 * k * twin.dt))
        t0 = clock()
        twin.step()
        samples[k] = clock() - t0
    wall = (clock() - wall0) * 1e-9
    median, p99 = _percentiles(samples)
    rtf = N_TWIN * twin.dt / wall
    print(f'  {label:34s} step per 1 ms simulated: median {median:6.1f} us  p99 {p99:6.1f} us;  '
          f'lockstep real-time factor {rtf:5.1f}x (target >= 1x real time, >= 5x campaigns: '
          f'{"met" if rtf >= 5 else "real-time only" if rtf >= 1 else "MISSED"})')


def main() -> None:
    print(f'motion-table step on a 6-D sinusoidal stream at 1 kHz ({N_IK} steps):')
    for robot in ('ur10e', 'kr120r2500pro', 'hexapod'):
        bench_ik(robot)
    print(f'MuJoCo lab twin, lockstep ({N_TWIN} steps of 1 ms):')
    bench_twin('client UR10e + mock-up', facility_config('serial'))
    bench_twin('client hexapod + mock-up', facility_config('hexapod'))
    bench_twin('client UR10e + servicer KR120 + LBR', facility_config('serial', with_servicer=True))


if __name__ == '__main__':
    main()
