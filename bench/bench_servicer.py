"""One servicer step of seed 004 §III-B for the 7-DOF LBR iiwa 14 servicer: the Eq. (12)
terms, the Eq. (18) admittance step (RKMK4, nominal included) and the Eq. (22) torques.

This is what the servicer admittance node does per 1 kHz sample: take the measured arm
state and wrenches, advance g_s, compute tau_q. Target: <= 100 us median on this machine
(seed 003 reports 2.3 ms per Newton-Euler iteration in MATLAB, for comparison).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from hil_dynamics import se3
from hil_dynamics.models import servicer_lbr_urdf
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel, servicer_initial_state

TARGET_US = 100.0


def main(samples: int = 20000) -> None:
    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    client = RigidBody(8000.0, [17000.0, 124000.0, 129000.0])
    g_t0 = se3.pose(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), [1.0, 2.0, 3.0])
    v_t0 = np.array([0.01, -0.02, 0.005, 0.002, np.deg2rad(-2.5), 0.01])
    init = servicer_initial_state(g_t0, v_t0, g_t0 * se3.pose(translation=[-6.0, 0.5, -0.4]))
    adm = ServicerAdmittance(model, client, v_t0, g_t0, init.pose_base_in_nominal, init.twist_base_rel_body)
    ff = ArmFeedForward(model)
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, 7)
    dq = rng.normal(0, 0.1, 7)
    ddq = rng.normal(0, 0.1, 7)
    f_b = rng.normal(0, 10, 6)
    f_e = rng.normal(0, 1, 6)
    tau = rng.normal(0, 1, 7)
    dt = 1e-3
    times = np.empty((samples, 2))
    cpu0 = 0.0
    for k in range(samples + 500):
        if k == 500:
            cpu0 = time.process_time()
        t0 = time.perf_counter()
        s = adm.step(dt, q, dq, ddq, f_b, f_e)
        t1 = time.perf_counter()
        torques = ff.torques(tau, q, dq, s.pose_base_in_nominal, s.twist_base_rel_body, s.twist_nominal_body,
                             adm.nominal_acceleration(s.twist_nominal_body))
        t2 = time.perf_counter()
        if k >= 500:
            times[k - 500] = (t1 - t0, t2 - t1)
        q = q + dt * dq
    cpu_us = (time.process_time() - cpu0) / samples * 1e6
    assert np.all(np.isfinite(torques.tau_q))
    us = times * 1e6
    total = us.sum(axis=1)
    print(f'servicer step (Eq. 12 terms + Eq. 18 RKMK4 + Eq. 22), LBR iiwa 14, {samples} samples:')
    print(f'  median {np.median(total):.1f} us   p99 {np.percentile(total, 99):.1f} us   max {total.max():.1f} us'
          f'   (target median <= {TARGET_US:.0f} us; seed 003: 2300 us per Newton-Euler iteration in MATLAB)')
    print(f'    of which admittance step (Eq. 12 + 18, RKMK4) median {np.median(us[:, 0]):.1f} us,'
          f' torques (Eq. 22) median {np.median(us[:, 1]):.1f} us')
    print(f'  process CPU time per step (incl. the loop): mean {cpu_us:.1f} us'
          f'  (less sensitive than wall time to other load on the machine)')


if __name__ == '__main__':
    main()
