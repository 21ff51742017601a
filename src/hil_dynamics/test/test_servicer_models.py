"""The generated URDFs: published numbers, loadable by Pinocchio and MuJoCo, consistent."""

import math

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.models import (BaseSpec, lbr_iiwa14_urdf, servicer_lbr_urdf, servicer_ssrms_urdf, ssrms_urdf)
from hil_dynamics.models.ssrms import TABLE_1


def _fixed(urdf):
    model = pin.buildModelFromXML(urdf)
    return model, model.createData()


def test_lbr_kinematics_match_kuka_dimensions():
    model, data = _fixed(lbr_iiwa14_urdf())
    assert model.nq == 7
    pin.framesForwardKinematics(model, data, np.zeros(7))
    # KUKA spec: 0.36 + 0.42 + 0.40 + 0.126 m to the flange, arm straight up at zero angles.
    np.testing.assert_allclose(data.oMf[model.getFrameId('lbr_flange')].translation, [0, 0, 1.306], atol=1e-12)
    # A2, A4, A6 at 0.36, 0.78, 1.18 m.
    for k, z in ((2, 0.36), (4, 0.78), (6, 1.18)):
        np.testing.assert_allclose(data.oMi[model.getJointId(f'lbr_joint_{k}')].translation, [0, 0, z], atol=1e-12)
    # Limits of the KUKA spec (A1 +-170 deg, A2 +-120 deg, A7 +-175 deg; A1 320 N m, A7 40 N m).
    np.testing.assert_allclose(model.upperPositionLimit[[0, 1, 6]], np.deg2rad([170, 120, 175]))
    np.testing.assert_allclose(model.effortLimit[[0, 6]], [320, 40])
    # Weight about 30 kg (KUKA: 29.5-29.9 kg); Pinocchio merges the fixed link_0 into the universe.
    assert 29.0 < sum(inertia.mass for inertia in model.inertias) < 31.0


@pytest.mark.parametrize('urdf_fn', [lbr_iiwa14_urdf, ssrms_urdf])
def test_mujoco_and_pinocchio_read_the_same_arm(urdf_fn):
    """Two independent parsers and dynamics codes agree on the joint-space mass matrix."""
    urdf = urdf_fn()
    model, data = _fixed(urdf)
    mj = mujoco.MjModel.from_xml_string(urdf)
    mjd = mujoco.MjData(mj)
    assert mj.njnt == 7 and mj.nv == 7
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, 7)
        mjd.qpos[:] = q
        mujoco.mj_forward(mj, mjd)
        dense = np.zeros((7, 7))
        mujoco.mj_fullM(mj, mjd, dense)
        m_pin = pin.crba(model, data, q)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        np.testing.assert_allclose(dense, m_pin, rtol=1e-9, atol=1e-9 * np.abs(m_pin).max())


def test_ssrms_reproduces_table_1():
    model, data = _fixed(ssrms_urdf())
    # Link i+1 of Table 1 is the body of joint i; its mass properties must round-trip.
    for i in range(1, 8):
        mass, com, (ixx, iyy, izz, ixy), _ = TABLE_1[i]
        inertia = model.inertias[model.getJointId(f'ssrms_joint_{i}')]
        assert inertia.mass == pytest.approx(mass)
        np.testing.assert_allclose(inertia.lever, com, atol=1e-12)
        expected = np.array([[ixx, ixy, 0], [ixy, iyy, 0], [0, 0, izz]])
        np.testing.assert_allclose(inertia.inertia, expected, atol=1e-9)
    pin.framesForwardKinematics(model, data, np.zeros(7))
    tip = np.sum([row[3] for row in TABLE_1], axis=0)
    np.testing.assert_allclose(data.oMf[model.getFrameId('ssrms_lee_tip')].translation, tip, atol=1e-12)
    # The fixed link 1 is merged into the universe body.
    assert sum(row[0] for row in TABLE_1) == pytest.approx(sum(i.mass for i in model.inertias))


@pytest.mark.parametrize('urdf_fn, arm_base_mass', [(servicer_lbr_urdf, 5.0), (servicer_ssrms_urdf, 246.66)])
def test_servicer_root_frame_is_the_base_com(urdf_fn, arm_base_mass):
    model = pin.buildModelFromXML(urdf_fn(), pin.JointModelFreeFlyer())
    assert model.nq == 14 and model.nv == 13
    root = model.inertias[1]
    assert root.mass == pytest.approx(1800.0 + arm_base_mass)
    np.testing.assert_allclose(root.lever, 0.0, atol=1e-12)


def test_bad_base_is_rejected_with_its_name():
    with pytest.raises(ValueError, match='mass_kg'):
        servicer_lbr_urdf(BaseSpec(mass_kg=-1.0))
    with pytest.raises(ValueError, match='inertia_com_kgm2'):
        servicer_lbr_urdf(BaseSpec(inertia_com_kgm2=(1.0, 1.0, -1.0, 0.0, 0.0, 0.0)))
    assert math.isfinite(BaseSpec().inertia_matrix()[0, 0])
