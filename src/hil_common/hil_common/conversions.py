"""Conversions between the stack's SE(3)/twist/wrench values and ROS messages.

Conventions are those of :mod:`hil_dynamics.se3`: twists and wrenches are numpy
6-vectors, linear (force) before angular (torque); poses are ``pinocchio.SE3``.
Quaternions in messages are ROS order (x, y, z, w). Plain functions, no rclpy.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from hil_common.errors import InputError
from hil_common.finite import all_finite


def pose_from_msg(msg) -> pin.SE3:
    """geometry_msgs/Pose -> SE3. Raises ValueError on a non-finite or zero quaternion."""
    q = msg.orientation
    p = msg.position
    return pose_from_xyzquat((p.x, p.y, p.z, q.x, q.y, q.z, q.w))


def pose_from_xyzquat(values) -> pin.SE3:
    """``[x, y, z, qx, qy, qz, qw]`` (a Pose's fields in order, as :mod:`hil_common.cdr` decodes them) -> SE3,
    the quaternion normalised. Raises ValueError on a non-finite value or a zero quaternion."""
    x, y, z, qx, qy, qz, qw = (float(v) for v in values)
    if not all_finite((x, y, z, qx, qy, qz, qw)):
        raise InputError('pose has non-finite values')
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if norm < 1e-9:
        raise InputError('pose orientation is a zero quaternion')
    quat = pin.Quaternion(qw / norm, qx / norm, qy / norm, qz / norm)
    return pin.SE3(quat.toRotationMatrix(), np.array([x, y, z]))


def pose_xyzquat(g: pin.SE3) -> tuple[float, ...]:
    """An SE3 as a Pose's fields in order, ``(x, y, z, qx, qy, qz, qw)``, the quaternion with w >= 0 (for
    :func:`pose_to_msg` and the raw encoders of :mod:`hil_common.cdr`)."""
    x, y, z, w = pin.Quaternion(g.rotation).coeffs()
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    t = g.translation
    return float(t[0]), float(t[1]), float(t[2]), float(x), float(y), float(z), float(w)


def pose_to_msg(g: pin.SE3, msg) -> None:
    """Fill a geometry_msgs/Pose from an SE3 (quaternion with w >= 0)."""
    (msg.position.x, msg.position.y, msg.position.z,
     msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w) = pose_xyzquat(g)


def twist_to_msg(twist, msg) -> None:
    """Fill a geometry_msgs/Twist from ``[v; w]``."""
    msg.linear.x, msg.linear.y, msg.linear.z = (float(v) for v in twist[:3])
    msg.angular.x, msg.angular.y, msg.angular.z = (float(v) for v in twist[3:])


def twist_from_msg(msg) -> np.ndarray:
    return np.array([msg.linear.x, msg.linear.y, msg.linear.z, msg.angular.x, msg.angular.y, msg.angular.z])


def wrench_from_msg(msg) -> np.ndarray:
    """geometry_msgs/Wrench -> ``[f; tau]``."""
    return np.array([msg.force.x, msg.force.y, msg.force.z, msg.torque.x, msg.torque.y, msg.torque.z])


def wrench_to_msg(wrench, msg) -> None:
    msg.force.x, msg.force.y, msg.force.z = (float(v) for v in wrench[:3])
    msg.torque.x, msg.torque.y, msg.torque.z = (float(v) for v in wrench[3:])


def xyz_rpy_to_pose(values) -> pin.SE3:
    """``[x, y, z, roll, pitch, yaw]`` (m, rad; rotation R = Rz(yaw) Ry(pitch) Rx(roll)) -> SE3."""
    values = [float(v) for v in values]
    return pin.SE3(pin.rpy.rpyToMatrix(*values[3:6]), np.array(values[:3]))


def seconds_of(sec: int, nanosec: int) -> float:
    """A stamp's ``sec``, ``nanosec`` as seconds (a decoded header's, :mod:`hil_common.cdr`)."""
    return sec + nanosec * 1e-9


def stamp_to_seconds(stamp) -> float:
    return seconds_of(stamp.sec, stamp.nanosec)


def stamp_of_seconds(seconds: float) -> tuple[int, int]:
    """``(sec, nanosec)`` of a time [s], rounded as a whole: a fraction that rounds up to a full second carries into
    sec (0.9999999999 s is 1 s 0 ns, not 0 s 0 ns)."""
    sec, nanosec = divmod(int(round(seconds * 1e9)), 1_000_000_000)
    return int(sec), int(nanosec)


def seconds_to_stamp(seconds: float, stamp) -> None:
    stamp.sec, stamp.nanosec = stamp_of_seconds(seconds)


class JointOrder:
    """A joint message's ``values`` (given for its ``names``) in ``expected_names`` order, or None if a joint is
    missing, a value is missing or one is not finite. For one stream of messages: the index is worked out again
    only when the names differ from the previous message's (a robot driver sends the same names every time).
    ``hil_motion_table.kinematics_helpers.reorder`` and ``hil_admittance.node_common.JointPicker`` use it."""

    def __init__(self, expected_names):
        self.expected_names = tuple(expected_names)
        self._names: tuple | None = None
        self._index: np.ndarray | None = None     # positions of expected_names in _names (None: one is missing)
        self._needs = 0                            # how many values a message must have

    def __call__(self, names, values) -> np.ndarray | None:
        names = names if type(names) is tuple else tuple(names)
        if names != self._names:
            self._names = names
            position = {n: i for i, n in enumerate(names)}
            missing = any(n not in position for n in self.expected_names)
            self._index = None if missing else np.array([position[n] for n in self.expected_names], dtype=np.intp)
            self._needs = 1 + max((position[n] for n in self.expected_names), default=-1) if not missing else 0
        index = self._index
        if index is None or self._needs > len(values):
            return None
        out = np.asarray(values, dtype=float)[index]
        if not all_finite(out):
            return None
        return out
