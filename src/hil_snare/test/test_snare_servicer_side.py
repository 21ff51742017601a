"""The HIL servicer side (SSRMS driven by a measured LEE wrench) against a work-energy balance."""

import numpy as np
import pytest

from hil_snare.arms import SSRMS_TABLE1
from hil_snare.joints import DEG, SsrmsGearbox
from hil_snare.servicer_side import FlexibleArmServicer
from hil_snare.system import ArmConfig


def test_work_of_the_measured_wrench_equals_the_arm_energy_gain():
    """D = k_p = k_d = 0: the only power into the arm is F_e . V_lee (wrench held over each step)."""
    arm = ArmConfig(SSRMS_TABLE1, SsrmsGearbox(), 2.67e-4 * 1845.0 ** 2, 0.0)
    q0 = np.array([-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5]) * DEG
    side = FlexibleArmServicer(arm, q0, kp=0.0, kd=0.0)
    wrench = np.array([0.0, 20.0, -40.0, 0.0, 5.0, 0.0])       # like a wire pushing on the LEE
    dt = 1e-3
    work = 0.0
    _, twist = side.lee_state()
    for _ in range(1500):
        p0 = float(wrench @ twist)
        _, twist = side.step(dt, wrench, control=False)
        work += 0.5 * dt * (p0 + float(wrench @ twist))          # trapezoid of the power
    assert work > 1e-3                                            # the wrench did move the arm
    assert side.energy() == pytest.approx(work, rel=2e-3)


def test_measured_wrench_deflects_the_flexible_joints_not_the_motors_at_first():
    """Right after a wrench step the links move before the motors (two-inertia model)."""
    arm = ArmConfig(SSRMS_TABLE1, SsrmsGearbox(), 2.67e-4 * 1845.0 ** 2, 18000.0)
    q0 = np.array([-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5]) * DEG
    side = FlexibleArmServicer(arm, q0)
    for _ in range(50):
        side.step(1e-3, np.array([0.0, 0.0, 100.0, 0.0, 0.0, 0.0]))
    n = side.n
    link_motion = np.abs(side.x[:n] - q0).max()
    motor_motion = np.abs(side.x[2 * n:3 * n] - q0).max()
    assert link_motion > 10 * motor_motion > 0.0
