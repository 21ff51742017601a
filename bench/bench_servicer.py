"""One servicer step of seed 004 §III-B for the 7-DOF LBR iiwa 14 servicer: the Eq. (12)
terms, the Eq. (18) admittance step (RKMK4, nominal included) and the Eq. (22) torques.

This is what the servicer admittance node does per 1 kHz sample: take the measured arm
state and wrenches, advance g_s, compute tau_q. Target: <= 100 us median and, aimed at,
<= 10x Pinocchio's ``aba`` on the same model measured in the same run (issue 17; seed 003
reports 2.3 ms per Newton-Euler iteration in MATLAB, for comparison). The readable
reference forms (``step_reference``, ``torques_reference``) are timed beside the fast ones: ``compiled`` is
what the nodes run (``ArmFeedForward.torque_command``), ``fused`` gives Eq. (22) term by term (``torques``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aba_reference import aba_us, ratio  # noqa: E402

from hil_dynamics import se3  # noqa: E402
from hil_dynamics.models import servicer_lbr_urdf  # noqa: E402
from hil_dynamics.rigid_body import RigidBody  # noqa: E402
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel, servicer_initial_state  # noqa: E402

TARGET_US = 100.0


def _measure(adm, ff, step, torques, samples, pose_arrays=False):
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, 7)
    dq, ddq = rng.normal(0, 0.1, 7), rng.normal(0, 0.1, 7)
    f_b, f_e, tau = rng.normal(0, 10, 6), rng.normal(0, 1, 6), rng.normal(0, 1, 7)
    dt = 1e-3
    times = np.empty((samples, 2))
    for k in range(samples + 500):
        t0 = time.perf_counter()
        s = step(dt, q, dq, ddq, f_b, f_e)
        t1 = time.perf_counter()
        torques(tau, q, dq, s.pose_arrays()[1] if pose_arrays else s.pose_base_in_nominal, s.twist_base_rel_body,
                s.twist_nominal_body, adm.nominal_acceleration(s.twist_nominal_body))
        t2 = time.perf_counter()
        if k >= 500:
            times[k - 500] = (t1 - t0, t2 - t1)
        q = q + dt * dq
    return times * 1e6


def main(samples: int = 10000) -> None:
    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    client = RigidBody(8000.0, [17000.0, 124000.0, 129000.0])
    g_t0 = se3.pose(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), [1.0, 2.0, 3.0])
    v_t0 = np.array([0.01, -0.02, 0.005, 0.002, np.deg2rad(-2.5), 0.01])
    init = servicer_initial_state(g_t0, v_t0, g_t0 * se3.pose(translation=[-6.0, 0.5, -0.4]))
    aba = aba_us()
    print(f'servicer step (Eq. 12 terms + Eq. 18 RKMK4 + Eq. 22), LBR iiwa 14, {samples} samples; '
          f'pin.aba on the same model: {aba:.2f} us median')
    # compiled: what the servicer nodes run (the admittance step, Eq. 22's tau_q in one call: torque_command);
    # fused: Eq. (22) with its terms apart (torques); reference: the readable forms
    for name in ('compiled', 'fused', 'reference'):
        adm = ServicerAdmittance(model, client, v_t0, g_t0, init.pose_base_in_nominal, init.twist_base_rel_body)
        ff = ArmFeedForward(model)
        step, torques = {'compiled': (adm.step, ff.torque_command), 'fused': (adm.step, ff.torques),
                         'reference': (adm.step_reference, ff.torques_reference)}[name]
        us = _measure(adm, ff, step, torques, samples if name != 'reference' else samples // 4, name == 'compiled')
        total = us.sum(axis=1)
        med = float(np.median(total))
        aim = med <= 10.0 * aba
        verdict = (f'target median <= {TARGET_US:.0f} us: {"met" if med <= TARGET_US else "MISSED"}; '
                   f'aim <= 10x aba: {"met" if aim else "not met"}')
        print(f'  {name:9s} median {med:6.1f} us ({ratio(med, aba)})   p99 {np.percentile(total, 99):7.1f} us   '
              f'[admittance {np.median(us[:, 0]):.1f} us ({ratio(np.median(us[:, 0]), aba)}), '
              f'torques {np.median(us[:, 1]):.1f} us ({ratio(np.median(us[:, 1]), aba)})]'
              + (f'   ({verdict})' if name == 'compiled' else ''))
    print(f'  pin.aba re-measured after: {aba_us():.2f} us')


if __name__ == '__main__':
    main()
