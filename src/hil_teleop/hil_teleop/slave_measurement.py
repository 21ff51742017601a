"""Slave position and velocity of seed 001 from the slave robot's measured joint states.

Eq. (3) needs ``x_s`` (coupling term) and ``v_s`` (damping term) of the slave end effector.
They are measured, not the command's own integral: forward kinematics of the measured
joints with the motion table's kinematics (:mod:`hil_motion_table.kinematics`, the same
URDF the IK uses), so a tracking error, a servo lag or a blocked robot shows up in ``x_s``.

Frames and conventions (:mod:`hil_teleop.coordinates`):

* ``pose_flange_in_base = FK(q)``; the end effector ``ee`` is a frame fixed to the flange,
  ``pose_ee_in_flange`` (for the HIL: the grip point, i.e. the wrist F/T measuring frame,
  with axes chosen parallel to the base at the start so the Euler angles of ``x_s`` start at
  zero, far from the gimbal lock of ``B(phi)``);
* ``x_s = [r; phi]`` of ``pose_ee_in_base = FK(q) pose_ee_in_flange``;
* ``v_s = [r_dot; omega]`` world-aligned at the end-effector origin, from the measured joint
  velocities: flange body twist ``J_body(q) q_dot``, moved to the end effector
  (``Ad_{pose_ee_in_flange^-1}``), then rotated to the base axes (seed 001 Appendix A,
  ``v = J q_dot``).

Plain Python, no rclpy; serial robots (the slave of seed 001 is an arm).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_teleop.coordinates import world_velocity, x_from_pose
from hil_common.errors import InputError


@dataclass
class SlaveMeasurement:
    """One measurement: ``x_s`` (6,), ``v_s`` (6,) world-aligned, and ``pose_ee_in_base``."""

    x_s: np.ndarray
    v_s: np.ndarray
    pose_ee_in_base: pin.SE3


class MeasuredSlave:
    """Forward kinematics of the slave arm to seed 001's ``x_s``, ``v_s``."""

    def __init__(self, kinematics, pose_ee_in_flange: pin.SE3 | None = None):
        if not hasattr(kinematics, 'jacobian_body') or getattr(kinematics, 'q_home', None) is None:
            raise TypeError('the slave must be a serial robot (SerialKinematics)')
        self.kin = kinematics
        self.pose_ee_in_flange = pin.SE3.Identity() if pose_ee_in_flange is None else pin.SE3(pose_ee_in_flange)
        self.joint_names = tuple(kinematics.joint_names)

    @classmethod
    def aligned_at(cls, kinematics, q_start, ee_in_flange_xyz=(0.0, 0.0, 0.0)) -> 'MeasuredSlave':
        """End effector at ``ee_in_flange_xyz`` [m] in the flange frame, its axes parallel to the base
        at joints ``q_start`` (so ``x_s(q_start)`` has zero Euler angles)."""
        flange = kinematics.forward(np.asarray(q_start, dtype=float))
        return cls(kinematics, pin.SE3(flange.rotation.T, np.asarray(ee_in_flange_xyz, dtype=float)))

    def pose(self, q) -> pin.SE3:
        """``pose_ee_in_base`` of the measured joints ``q`` [rad]."""
        return self.kin.forward(np.asarray(q, dtype=float)) * self.pose_ee_in_flange

    def flange_pose(self, pose_ee_in_base: pin.SE3) -> pin.SE3:
        """The flange pose that puts the end effector at ``pose_ee_in_base`` (a motion-table command)."""
        return pose_ee_in_base * self.pose_ee_in_flange.inverse()

    def measure(self, q, q_dot) -> SlaveMeasurement:
        """``x_s``, ``v_s`` from measured joint positions [rad] and velocities [rad/s]."""
        q = np.asarray(q, dtype=float)
        q_dot = np.asarray(q_dot, dtype=float)
        if q.shape != (self.kin.dof,) or q_dot.shape != (self.kin.dof,) or not (
                np.all(np.isfinite(q)) and np.all(np.isfinite(q_dot))):
            raise InputError(f'joint states must be {self.kin.dof} finite positions and velocities')
        pose = self.pose(q)
        twist_flange = pin.Motion(self.kin.jacobian_body(q) @ q_dot)
        twist_ee = self.pose_ee_in_flange.actInv(twist_flange).vector
        return SlaveMeasurement(x_from_pose(pose), world_velocity(pose, twist_ee), pose)
