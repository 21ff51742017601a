"""The grip between two robots (seed 001's HIL): a compliant gripper closing the slave on the payload mock-up."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import ConfigError
from hil_lab_twin.scene import FtConfig, GripConfig, RobotConfig, TwinConfig, teleop_facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import make_kinematics

QUIET = FtConfig(noise_force_std=0.0, noise_torque_std=0.0)
K_LIN = 2e4


def quiet_facility(**grip):
    config = teleop_facility_config(slave_ft=QUIET, payload_ft=QUIET)
    return dataclasses.replace(config, grip=dataclasses.replace(config.grip, **grip))


def rotation_of(twin, site):
    return twin.site_pose_in_world(site).rotation


def test_facility_starts_with_the_slave_frame_on_the_grapple():
    twin = LabTwin(quiet_facility())
    slave, grapple = twin.site_pose_in_world('slave_ft_site'), twin.site_pose_in_world('payload_grapple')
    np.testing.assert_allclose(slave.translation, grapple.translation, atol=1e-9)
    np.testing.assert_allclose(slave.rotation[:, 2], -grapple.rotation[:, 2], atol=1e-9)   # facing each other
    twin.step(500)                                          # closed at start, nothing moves: no grip wrench
    assert np.abs(twin.grip_wrench()).max() < 1e-3


@pytest.mark.parametrize('offset', [np.array([0.005, 0.0, 0.0]), np.array([0.0, -0.003, 0.004])])
def test_displaced_slave_pulls_with_k_times_the_offset_and_both_sensors_read_it(offset):
    """Hold the slave ``offset`` [m] (world) from where it closed: in steady state the grip force on the payload is
    ``K offset`` (the servos' integral action puts both robots where commanded), the wrist sensor reads its
    opposite, the payload sensor reads it -- each in its own frame, weights tared away."""
    twin = LabTwin(quiet_facility(engaged=False))
    twin.step(300)
    tare = {s: twin.wrench_true(s) for s in ('slave_ft', 'payload_ft')}
    twin.engage_grip()
    kin = make_kinematics('kr120r2500pro')
    q0 = twin.joint_state('slave').positions
    flange = kin.forward(q0)
    twin.command_positions('slave', kin.inverse(pin.SE3(flange.rotation, flange.translation + offset), q0).q)
    twin.step(4000)
    force = twin.grip_wrench()[:3]
    np.testing.assert_allclose(force, K_LIN * offset, atol=0.02 * K_LIN * np.abs(offset).max())
    r_slave, r_payload = rotation_of(twin, 'slave_ft_site'), rotation_of(twin, 'payload_ft_site')
    slave_reading = twin.wrench_true('slave_ft') - tare['slave_ft']
    payload_reading = twin.wrench_true('payload_ft') - tare['payload_ft']
    np.testing.assert_allclose(r_slave @ slave_reading[:3], -force, atol=0.05)
    np.testing.assert_allclose(r_payload @ payload_reading[:3], force, atol=0.05)
    # the moment about each sensor: the grip acts at the grapple, 0.27 m in front of the payload sensor
    lever = twin.site_pose_in_world('payload_grapple').translation - twin.site_pose_in_world('payload_ft_site').translation
    np.testing.assert_allclose(r_payload @ payload_reading[3:], np.cross(lever, force), atol=0.05)
    twin.release_grip()
    twin.step(3000)
    assert np.abs(twin.grip_wrench()).max() == 0.0
    np.testing.assert_allclose(twin.wrench_true('payload_ft'), tare['payload_ft'], atol=0.05)


def test_the_grip_wrenches_are_equal_and_opposite():
    """The grip's forces are internal to the facility: on the two bodies they sum to zero, and so do their
    moments about any point (here the world origin; MuJoCo's xfrc torque is about each body's CoM, whose
    position at application is one step older than ``xipos`` read after the step: the tolerance is the force
    times the CoMs' motion in 1 ms)."""
    twin = LabTwin(quiet_facility())
    q0 = twin.joint_state('slave').positions
    twin.command_positions('slave', q0 + np.array([0.0, 0.01, -0.01, 0.0, 0.0, 0.0]))
    twin.step(200)
    force = np.linalg.norm(twin.grip_wrench()[:3])
    assert force > 1.0
    bodies = list(twin._grip_bodies)
    applied = twin.data.xfrc_applied[bodies]
    np.testing.assert_allclose(applied[0, :3] + applied[1, :3], 0.0, atol=1e-12)
    total = sum(applied[i, 3:] + np.cross(twin.data.xipos[b], applied[i, :3]) for i, b in enumerate(bodies))
    assert np.linalg.norm(total) < force * 1e-3 * 0.1          # |F| x (0.1 m/s x 1 ms)


def test_bad_grip_configurations_are_named():
    robots = (RobotConfig('a', payload='none'), RobotConfig('b', base_xyz=(2.0, 0.0, 0.0)))
    with pytest.raises(ConfigError, match='grip.slave'):
        TwinConfig(robots=robots, grip=GripConfig('b', 'b')).check()
    with pytest.raises(ConfigError, match='grip.payload'):
        TwinConfig(robots=robots, grip=GripConfig('a', 'a')).check()
    with pytest.raises(ConfigError, match='grip.stiffness'):
        TwinConfig(robots=robots, grip=GripConfig('a', 'b', stiffness=(1.0,) * 5)).check()
    with pytest.raises(ConfigError, match='without a grip'):     # a twin built without one
        LabTwin(TwinConfig(robots=robots)).engage_grip()
