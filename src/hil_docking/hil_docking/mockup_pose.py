"""Where the chaser mock-up is, from the CISAS arm's joints (plain Python, no rclpy).

The docking node (:mod:`hil_docking.docking_facility_node`) reads the measured mock-up position
relative to the docking port in LVLH-aligned lab axes (seed 003 Fig. 5: ``dr`` of Eq. 11 as the
lab realises it). On the real facility that is the arm's forward kinematics: the flange position
in the robot's base frame, whose axes are the LVLH-aligned lab axes, minus the port's position
in that frame (``arm.dock_position_in_base_m`` of the docking scenario, the same point the
Newton-Euler reference of :func:`hil_docking.feedforward.cw_joint_reference` adds to ``dr``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_common.errors import InputError


class MockupPose:
    """``pose_lvlh(q)``: the mock-up's pose relative to the port (position ``p_flange - p_dock``, the
    flange's orientation), both in the base = LVLH-aligned lab axes."""

    def __init__(self, kin, dock_position_in_base_m):
        self.kin = kin
        self.p_dock = np.asarray(dock_position_in_base_m, dtype=float).reshape(3)

    def pose_lvlh(self, q) -> pin.SE3:
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.kin.joint_names),) or not np.all(np.isfinite(q)):
            raise InputError(f'joint positions must be {len(self.kin.joint_names)} finite numbers, got {q.tolist()}')
        flange = self.kin.forward(q)
        return pin.SE3(flange.rotation, flange.translation - self.p_dock)
