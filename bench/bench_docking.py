"""Seed 003 docking: the designer's Fig. 6 map at 50 x 50 points, one simulated boundary, and the
feed-forward cost per iteration on the CISAS arm.

Targets (ours): the Eq. (29) map and the exact-delay map fast enough for an interactive CLI
(< 0.1 s per 50 x 50 map); one time-domain stability boundary (multisection to 1 %) in
< 10 s; each feed-forward evaluation far below the seed's MATLAB 1.1-2.3 ms (<= 50 us).
"""

import time

import numpy as np

from hil_docking.arm import cisas_arm_spec, cisas_pin_model
from hil_docking.cw import seed_reference_transfer
from hil_docking.designer import exact_map, m_min_exact, m_min_pade1, m_min_simulated, pade1_map
from hil_docking.designer_cli import FIG6_DELAYS_S
from hil_docking.feedforward import FEEDFORWARDS, SEED_ITERATION_TIME_S, cw_joint_reference, time_per_iteration_s
from hil_motion_table.kinematics import SerialKinematics


def verdict(value, target):
    return 'met' if value <= target else 'MISSED'


def main() -> None:
    ks, bs = np.geomspace(1e2, 1e5, 50), np.geomspace(10.0, 2000.0, 50)
    print('designer map, 50 x 50 (k, b) points per delay:')
    for d in FIG6_DELAYS_S:
        t0 = time.perf_counter()
        pade1_map(d, ks, bs)
        t1 = time.perf_counter()
        exact_map(d, ks, bs)
        t2 = time.perf_counter()
        print(f'  Delta = {d * 1e3:4.1f} ms: Eq. (29) map {(t1 - t0) * 1e3:7.2f} ms, exact-delay map '
              f'{(t2 - t1) * 1e3:7.2f} ms (target < 100 ms: {verdict(t2 - t1, 0.1)})')
    d, k, b = 0.010, 5000.0, 100.0
    t0 = time.perf_counter()
    sim = m_min_simulated(d, k, b, rel_tol=0.01)
    elapsed = time.perf_counter() - t0
    exact, pade = m_min_exact(d, k, b), float(m_min_pade1(d, k, b))
    print(f'one simulated boundary (Delta = 10 ms, k = 5000 N/m, b = 100 N s/m): {elapsed:.2f} s '
          f'(target < 10 s: {verdict(elapsed, 10.0)})')
    print(f'  m_min: simulated {sim:.4f} kg, exact margin {exact:.4f} kg, Eq. (29) {pade:.4f} kg '
          f'({(pade / sim - 1) * 100:+.1f} %: optimistic)')
    kin = SerialKinematics(cisas_arm_spec())
    cw, transfer = seed_reference_transfer()
    ref = cw_joint_reference(kin, cw, transfer, np.array([0.6, 0.4, 0.55]), kin.forward(kin.spec.q_home).rotation, 0.01)
    model = cisas_pin_model()
    print('feed-forward per iteration on the CISAS arm (Python -> Pinocchio; seed: MATLAB, i7-3770):')
    for v in FEEDFORWARDS:
        t = time_per_iteration_s(model, ref, v, repeats=20000)
        print(f'  {v:<14s} median {t * 1e6:7.2f} us   (seed {SEED_ITERATION_TIME_S[v] * 1e3:.1f} ms; '
              f'target <= 50 us: {verdict(t, 50e-6)})')


if __name__ == '__main__':
    main()
