"""The CISAS arm (seed 003 §II) and the feed-forward variants along the CW manoeuvre (§VI)."""

import numpy as np
import pinocchio as pin
import pytest

from hil_docking.arm import ARMATURE_KGM2, CISAS_LINK_MASSES_KG, cisas_arm_spec, cisas_pin_model
from hil_docking.cw import seed_reference_transfer
from hil_docking.feedforward import (FEEDFORWARDS, SEED_ITERATION_TIME_S, FeedForward, cw_joint_reference, damped_kd,
                                     simulate_tracking)
from hil_motion_table.kinematics import SerialKinematics

P_DOCK_IN_BASE = np.array([0.6, 0.4, 0.55])


def test_urdf_has_the_seed_masses_and_lengths():
    model = cisas_pin_model()
    assert [model.inertias[j].mass for j in range(1, 7)] == pytest.approx(list(CISAS_LINK_MASSES_KG))
    kin = SerialKinematics(cisas_arm_spec())
    # Stretched horizontally (q2 = 0): the wrist centre is 0.7 + 0.6 m out at the 0.7 m shoulder height.
    flange = kin.forward(np.zeros(6))
    assert flange.translation == pytest.approx([0.7 + 0.6 + 0.08, 0.0, 0.7])


def test_installed_urdf_is_the_generated_one():
    """share/hil_docking/urdf/cisas.urdf is arm.py's URDF (regenerate it with cisas_arm_urdf() after a change)."""
    from pathlib import Path

    from ament_index_python.packages import get_package_share_directory

    from hil_docking.arm import cisas_arm_urdf
    source = Path(__file__).resolve().parents[1] / 'urdf' / 'cisas.urdf'
    installed = Path(get_package_share_directory('hil_docking')) / 'urdf' / 'cisas.urdf'
    assert source.read_text() == cisas_arm_urdf()
    assert installed.read_text() == cisas_arm_urdf()
    model = pin.buildModelFromUrdf(str(installed))
    assert model.nq == 6


def test_lagrange_terms_match_eqs_7_and_9_built_from_link_jacobians():
    """Eq. (7): M = sum m_i J_P^T J_P + J_O^T R I R^T J_O (+ armature); Eqs. (9)-(10): G = -sum m_i J_P^T g0."""
    model = cisas_pin_model()
    data = model.createData()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, 6)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        mass_eq7, grav_eq9 = np.diag(model.armature).astype(float), np.zeros(6)
        for j in range(1, 7):
            inertia = model.inertias[j]
            jac = pin.getJointJacobian(model, data, j, pin.LOCAL)          # body frame of joint j
            rot = data.oMi[j].rotation
            jp = rot @ (jac[0:3] - pin.skew(inertia.lever) @ jac[3:6])     # CoM linear velocity, world axes
            jo = rot @ jac[3:6]
            i_world = rot @ inertia.inertia @ rot.T
            mass_eq7 += inertia.mass * jp.T @ jp + jo.T @ i_world @ jo
            grav_eq9 -= inertia.mass * jp.T @ model.gravity.linear
        ff_mg, ff_g = FeedForward(model, 'lagrange_mg'), FeedForward(model, 'lagrange_g')
        qdd = rng.normal(size=6)
        assert ff_g.torque(q, np.zeros(6), qdd) == pytest.approx(grav_eq9, abs=1e-10)
        assert ff_mg.torque(q, np.zeros(6), qdd) == pytest.approx(mass_eq7 @ qdd + grav_eq9, abs=1e-10)
        # Newton-Euler (Eqs. 3-4) at zero velocity is exactly M q'' + G.
        assert FeedForward(model, 'newton_euler').torque(q, np.zeros(6), qdd) == pytest.approx(mass_eq7 @ qdd + grav_eq9,
                                                                                                abs=1e-10)
    assert ARMATURE_KGM2 > 0.0


@pytest.fixture(scope='module')
def reference():
    kin = SerialKinematics(cisas_arm_spec())
    cw_model, transfer = seed_reference_transfer()
    rot = kin.forward(kin.spec.q_home).rotation
    ref = cw_joint_reference(kin, cw_model, transfer, P_DOCK_IN_BASE, rot, 5e-3)
    # The reference reproduces the CW path at the flange (IK) and its velocity (Eq. 2).
    for i in (0, ref.t.size // 2, ref.t.size - 1):
        assert kin.forward(ref.q[i]).translation == pytest.approx(ref.p_flange[i], abs=1e-9)
    assert ref.p_flange[-1] == pytest.approx(P_DOCK_IN_BASE, abs=1e-12)
    return ref


def test_newton_euler_tracks_the_cw_manoeuvre_below_a_tenth_of_a_degree(reference):
    model = cisas_pin_model()
    kd = damped_kd(model, cisas_arm_spec().q_home)
    runs = {v: simulate_tracking(model, reference, v, SEED_ITERATION_TIME_S[v], kd=kd, max_substep_s=2.5e-3)
            for v in FEEDFORWARDS}
    ne = runs['newton_euler'].max_error_deg.max()
    assert ne < 0.1                                                   # seed 003 §VII: < 0.1 deg
    # The exact model beats both Lagrange approximations by a wide margin.
    assert 5.0 * ne < runs['lagrange_mg'].max_error_deg.max()
    assert 5.0 * ne < runs['lagrange_g'].max_error_deg.max()
    with pytest.raises(ValueError, match='variant'):
        FeedForward(model, 'hamilton')
