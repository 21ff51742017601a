"""Issue item 2: with F_b = 0 and no external wrench, the free-floating servicer conserves its
linear momentum and its angular momentum about the system CoM while the arm moves under an
arbitrary tau -- both in the absolute integration and in the relative one mapped by Eq. (23)."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.servicer_lockstep import build_servicer_loop

from reference_servicer import AbsoluteServicer
from servicer_scenarios import CLIENT, POSE_CLIENT_IN_ORBIT_0, POSE_NOMINAL_IN_LAB, TWIST_CLIENT_BODY_0, scenario

ZERO = np.zeros(6)


def _momentum(model, data, pose_base, twist_base, q, dq):
    """[p; L] in orbit axes, L about the system CoM (Pinocchio centroidal momentum)."""
    config = np.concatenate((pin.SE3ToXYZQUAT(pose_base), q))
    return pin.computeCentroidalMomentum(model, data, config, np.concatenate((twist_base, dq))).vector.copy()


def _drift(history):
    h = np.array(history)
    lin = np.linalg.norm(h[:, :3] - h[0, :3], axis=1).max() / np.linalg.norm(h[0, :3])
    ang = np.linalg.norm(h[:, 3:] - h[0, 3:], axis=1).max() / np.linalg.norm(h[0, 3:])
    return lin, ang


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_absolute_momentum_is_conserved(arm):
    sc = scenario(arm, alpha=0.05)
    ref = AbsoluteServicer(sc.urdf, sc.ee_frame, sc.pose_base_in_orbit_0, sc.initial.twist_base_body, sc.q0, sc.dq0)
    history, travel = [], 0.0
    for k in range(20000):                          # 20 s at 1 kHz
        if k % 100 == 0:
            history.append(ref.centroidal_momentum())
        ref.step(1e-3, lambda t: ZERO, sc.tau, lambda t: ZERO)
        travel = max(travel, float(np.abs(ref.q_arm - sc.q0).max()))
    history.append(ref.centroidal_momentum())
    assert travel > 0.2                             # the arm really moved
    lin, ang = _drift(history)
    assert lin < 1e-9 and ang < 1e-9, (lin, ang)
    # The same check catches a small base torque (1e-6 of |L| in one step): not a vacuous tolerance.
    torque = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1e-3 * np.linalg.norm(history[0][3:])])
    ref.step(1e-3, lambda t: torque, sc.tau, lambda t: ZERO)
    assert _drift([history[0], ref.centroidal_momentum()])[1] > 1e-7


def test_relative_simulation_conserves_the_orbit_momentum():
    sc = scenario('lbr', alpha=0.05)
    loop = build_servicer_loop(sc.urdf, sc.ee_frame, CLIENT, TWIST_CLIENT_BODY_0, sc.initial.pose_base_in_nominal,
                               sc.initial.twist_base_rel_body, sc.q0, sc.dq0, pose_nominal_in_orbit_0=POSE_CLIENT_IN_ORBIT_0,
                               pose_nominal_in_lab=POSE_NOMINAL_IN_LAB)
    model = pin.buildModelFromXML(sc.urdf, pin.JointModelFreeFlyer())
    data = model.createData()
    history = []
    for k in range(5000):                           # 5 s at 1 kHz
        if k % 100 == 0:
            pose_b, twist_b = loop.absolute()
            history.append(_momentum(model, data, pose_b, twist_b, loop.q_arm, loop.dq_arm))
        loop.step(1e-3, ZERO, sc.tau, ZERO)
    lin, ang = _drift(history)
    assert lin < 1e-9 and ang < 1e-9, (lin, ang)
