"""Kinematics helpers shared by the motion-table node, the runners and the tests (no rclpy): robot kinematics by
model name, home pose, flange targets and twists from a body's motion, joint reordering, test trajectories."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from hil_motion_table.kinematics import HexapodKinematics, SerialKinematics
from hil_motion_table.robot_models import SERIAL_ROBOTS, hexapod_spec
from hil_common.conversions import JointOrder
from hil_common.errors import ConfigError

ROBOTS = tuple(sorted(SERIAL_ROBOTS)) + ('hexapod',)


def make_kinematics(robot: str, name: str = 'hexapod'):
    """Kinematics for a robot model name (``ur10e``, ``kr120r2500pro`` or ``hexapod``)."""
    if robot == 'hexapod':
        return HexapodKinematics(hexapod_spec(name=name))
    if robot not in SERIAL_ROBOTS:
        raise ConfigError(f'unknown robot {robot!r}; one of {ROBOTS}')
    return SerialKinematics(SERIAL_ROBOTS[robot]())


def home_pose(kin) -> pin.SE3:
    """Flange (platform) pose of the robot's home configuration, in its base frame."""
    return kin.home_pose if isinstance(kin, HexapodKinematics) else kin.forward(kin.q_home)


def flange_target_from_body_motion(pose_flange_home_in_base: pin.SE3, pose_body_in_flange: pin.SE3,
                                   pose_body_in_body0: pin.SE3) -> pin.SE3:
    """Flange pose that moves a body rigidly attached to the flange by ``pose_body_in_body0``.

    ``pose_body_in_body0`` is the body's pose relative to where it was with the table at
    home (e.g. ``g_c`` of seed 004 Eq. 11, the client CoM in the nominal frame, when the
    nominal frame starts at the client CoM). With ``Y = pose_body_in_flange``:
    ``pose_body_in_base = home Y g`` and so ``pose_flange_in_base = home Y g Y^-1``.
    """
    return pose_flange_home_in_base * pose_body_in_flange * pose_body_in_body0 * pose_body_in_flange.inverse()


class FlangeTarget:
    """:func:`flange_target_from_body_motion` for one table, whose ``home`` and ``Y = pose_body_in_flange`` stay:
    the constant products ``home Y`` (``pose_body_home_in_base``) and ``Y^-1`` made once. The function evaluates
    ``((home Y) g) Y^-1``, so these are the same products in the same order and the same poses to the bit
    (``test_tracking`` checks it); a lockstep runner calls it for every table at every step."""

    def __init__(self, pose_flange_home_in_base: pin.SE3, pose_body_in_flange: pin.SE3):
        self.pose_body_home_in_base = pose_flange_home_in_base * pose_body_in_flange
        self.pose_flange_in_body = pose_body_in_flange.inverse()

    def __call__(self, pose_body_in_body0: pin.SE3) -> pin.SE3:
        """``pose_flange_in_base`` that puts the body at ``pose_body_in_body0`` (relative to its home pose)."""
        return self.pose_body_home_in_base * pose_body_in_body0 * self.pose_flange_in_body


def flange_twist_from_body_twist(pose_body_in_flange: pin.SE3, twist_body) -> np.ndarray:
    """Flange body twist of :func:`flange_target_from_body_motion` for a body twist ``V`` of g:
    ``Ad_Y V`` (linear first)."""
    return pose_body_in_flange.act(pin.Motion(np.asarray(twist_body, dtype=float))).vector


def body_twist_from_joints(kin, q, dq, pose_body_in_flange: pin.SE3, pose_flange_in_base: pin.SE3 | None = None) -> np.ndarray:
    """The measured body twist (body axes, linear first) of a body rigidly on the flange, from the
    joints' positions ``q`` and rates ``dq``: the inverse of :func:`flange_twist_from_body_twist`,
    ``Y^-1`` of the flange's body twist ``J_b(q) dq`` (a hexapod: the platform twist that solves
    ``J(pose) V = dl``, at ``pose_flange_in_base`` if known, else from its forward kinematics). With
    the base fixed in the lab this is the realised ``V_c`` (or ``V_s``) of seed 004 Eq. (23), the
    passivity observer's measured port twist (Eq. 28)."""
    dq = np.asarray(dq, dtype=float)
    if isinstance(kin, HexapodKinematics):
        pose = pose_flange_in_base if pose_flange_in_base is not None else kin.forward(q)
        twist_flange = np.linalg.solve(kin.jacobian_body(pose), dq)
    else:
        twist_flange = kin.jacobian_body(q) @ dq
    return pose_body_in_flange.actInv(pin.Motion(twist_flange)).vector


def reorder(names, values, expected_names) -> np.ndarray | None:
    """``values`` (given for ``names``) in ``expected_names`` order; None if a joint is missing, a value is
    missing or one is not finite."""
    return JointOrder(expected_names)(names, values)


def sinusoid_pose(t: float, center: pin.SE3, amplitude, frequency_hz, phase=None,
                  offset=None) -> tuple[pin.SE3, np.ndarray]:
    """A 6-D sinusoidal pose about ``center`` and its body twist.

    ``u(t) = offset + a * sin(2 pi f t + phi)`` per component (linear first) and
    ``g(t) = center * exp6(u(t))``; the body twist is ``J_r(u) u_dot`` (Pinocchio Jexp6).
    """
    a = np.asarray(amplitude, dtype=float)
    f = np.asarray(frequency_hz, dtype=float)
    phi = np.zeros(6) if phase is None else np.asarray(phase, dtype=float)
    arg = 2 * math.pi * f * t + phi
    u = a * np.sin(arg) + (0.0 if offset is None else np.asarray(offset, dtype=float))
    u_dot = a * 2 * math.pi * f * np.cos(arg)
    motion = pin.Motion(u)
    return center * pin.exp6(motion), pin.Jexp6(motion) @ u_dot
