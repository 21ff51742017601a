"""The servicer admittance as the node runs it (ServicerAdmittance.step with the measured arm
state held over the sample): with the arm at rest it must render the locked servicer, a
rigid body of inertia M_b at the base CoM frame, relative to the nominal (Eq. 18, 23)."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import se3
from hil_dynamics.lie_integrators import rkmk4_step
from hil_dynamics.servicer import ServicerAdmittance, ServicerModel

from servicer_scenarios import ARMS, CLIENT, POSE_CLIENT_IN_ORBIT_0, TWIST_CLIENT_BODY_0, scenario


def _locked_inertia(urdf, q_arm):
    """Composite spatial inertia of base + arm frozen at q, base CoM frame (no CRBA)."""
    model = pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer())
    data = model.createData()
    pin.forwardKinematics(model, data, np.concatenate(([0, 0, 0, 0, 0, 0, 1.0], q_arm)))
    total = pin.Inertia.Zero()
    for i in range(1, model.njoints):
        total += data.oMi[i].act(model.inertias[i])
    return total


@pytest.mark.parametrize('arm', sorted(ARMS))
def test_arm_at_rest_renders_the_locked_servicer(arm):
    sc = scenario(arm)
    model = ServicerModel(sc.urdf, sc.ee_frame)
    adm = ServicerAdmittance(model, CLIENT, TWIST_CLIENT_BODY_0, POSE_CLIENT_IN_ORBIT_0, sc.initial.pose_base_in_nominal,
                             sc.initial.twist_base_rel_body)
    inertia = _locked_inertia(sc.urdf, sc.q0)
    m_inv = np.linalg.inv(inertia.matrix())
    jac_b = model.ee_jacobian(sc.q0)[:, :6]
    zero = np.zeros(model.n)

    pose, twist = sc.pose_base_in_orbit_0, sc.initial.twist_base_body.copy()
    dt = 1e-2
    for k in range(2000):                     # 20 s; inputs sampled at the start of each step
        t = k * dt
        f_b, f_e = sc.wrench_base_com(t), sc.wrench_ee(t)
        adm.step(dt, sc.q0, zero, zero, f_b, f_e)
        (pose,), twist = rkmk4_step(t, dt, (pose,), twist,
                                    lambda tt, g, x: (x.reshape(1, 6), m_inv @ (f_b + jac_b.T @ f_e
                                                                               - inertia.vxiv(pin.Motion(x)).vector)))
    pose_b, twist_b = adm.absolute()
    assert np.linalg.norm(pose.translation - sc.pose_base_in_orbit_0.translation) > 1.0
    assert np.linalg.norm(se3.log6(pose.actInv(pose_b))) < 1e-8
    np.testing.assert_allclose(twist_b, twist, atol=1e-10)


def test_joint_acceleration_enters_eq18_through_the_coupling_inertia():
    """One step with a measured ddq differs from the locked one by -M_b^-1 M_bq ddq dt."""
    sc = scenario('lbr')
    model = ServicerModel(sc.urdf, sc.ee_frame)
    ddq = np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.4])
    zero = np.zeros(7)
    runs = []
    for acc in (zero, ddq):
        adm = ServicerAdmittance(model, CLIENT, TWIST_CLIENT_BODY_0, POSE_CLIENT_IN_ORBIT_0,
                                 sc.initial.pose_base_in_nominal, sc.initial.twist_base_rel_body)
        runs.append(adm.step(1e-4, sc.q0, zero, acc, np.zeros(6), np.zeros(6)).twist_base_rel_body)
    mass = model.mass_matrix(sc.q0)
    expected = -np.linalg.solve(mass[:6, :6], mass[:6, 6:] @ ddq) * 1e-4
    np.testing.assert_allclose(runs[1] - runs[0], expected, rtol=1e-3)      # + O(dt^2)


def test_bad_inputs_name_the_parameter():
    sc = scenario('lbr')
    model = ServicerModel(sc.urdf, sc.ee_frame)
    adm = ServicerAdmittance(model, CLIENT, TWIST_CLIENT_BODY_0, None, pin.SE3.Identity(), np.zeros(6))
    ok = np.zeros(7)
    with pytest.raises(ValueError, match='dq_arm'):
        adm.step(1e-3, ok, np.zeros(6), ok, np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match='wrench_ee'):
        adm.step(1e-3, ok, ok, ok, np.zeros(6), [0, 0, np.inf, 0, 0, 0])
    with pytest.raises(ValueError, match='dt'):
        adm.step(0.0, ok, ok, ok, np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match='twist_base_rel_body_0'):
        ServicerAdmittance(model, CLIENT, TWIST_CLIENT_BODY_0, None, pin.SE3.Identity(), np.zeros(5))
