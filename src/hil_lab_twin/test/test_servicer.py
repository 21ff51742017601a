"""The servicer robot carrying the torque-controlled light-weight arm: friction, wrist F/T, gripper."""

import numpy as np
import pytest

from hil_lab_twin.scene import ArmConfig, FtConfig, TwinConfig, facility_config
from hil_lab_twin.twin import LabTwin


def servicer_twin(**arm):
    base = facility_config('serial', with_servicer=True)
    quiet = FtConfig(noise_force_std=0.0, noise_torque_std=0.0)
    return LabTwin(TwinConfig(robots=base.robots, arm=ArmConfig(wrist_ft=quiet, **arm)))


def test_arm_joint_friction_gives_the_analytic_steady_velocity():
    # tau - coulomb - viscous * w = 0  =>  w_ss = (tau - coulomb) / viscous, for tau > coulomb
    twin = servicer_twin(viscous_friction=0.5, coulomb_friction=0.3)
    q0 = twin.joint_state('servicer_arm').positions
    twin.command_efforts('servicer_arm', [0, 0, 0, 0, 0, 0, 0.2])  # below the Coulomb friction: sticks
    twin.step(500)
    assert abs(twin.joint_state('servicer_arm').positions[6] - q0[6]) < 2e-3
    twin.command_efforts('servicer_arm', [0, 0, 0, 0, 0, 0, 1.3])
    twin.step(1200)
    velocity = twin.joint_state('servicer_arm').velocities[6]
    assert velocity == pytest.approx((1.3 - 0.3) / 0.5, rel=0.05)


def test_wrist_sensor_reads_the_gripper_weight_and_the_gripper_closes():
    twin = servicer_twin()
    twin.step(100)
    wrench = twin.wrench_source('servicer_wrist_ft')()[0]
    assert np.linalg.norm(wrench[:3]) == pytest.approx((1.2 + 2 * 0.2) * 9.81, rel=1e-3)  # palm + fingers
    twin.command_gripper('servicer_arm', -0.03)
    twin.step(500)
    left = twin.data.qpos[twin.model.jnt_qposadr[twin._jid('servicer_arm_finger_left_joint')]]
    assert left == pytest.approx(-0.03, abs=2e-3)
    # the arm did not drift while the gripper moved (gravity compensated, no effort commanded)
    assert np.max(np.abs(twin.joint_state('servicer_arm').velocities)) < 1e-3


def test_effort_commands_of_wrong_length_or_non_finite_are_rejected():
    twin = servicer_twin()
    assert not twin.command_efforts('servicer_arm', [1.0] * 6)
    assert not twin.command_efforts('servicer_arm', [1.0] * 6 + [float('nan')])
    assert twin.rejected_count('servicer_arm') == 2
    assert twin.command_efforts('servicer_arm', [0.0] * 7)
