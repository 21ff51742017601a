"""Small pieces shared by the admittance and OBSW node shells (rclpy-free helpers)."""

from __future__ import annotations

import numpy as np

from hil_common.conversions import JointOrder


class JointPicker:
    """``(q, dq)`` of ``joint_names`` from a joint state's names, positions and velocities, or None if
    one is missing or non-finite (:class:`hil_common.conversions.JointOrder`: the index is worked out again
    only when the names change)."""

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        self._order = JointOrder(self.joint_names)

    def __call__(self, names, position, velocity) -> tuple[np.ndarray, np.ndarray] | None:
        if len(position) != len(names) or len(velocity) != len(names):
            return None
        q = self._order(names, position)
        dq = None if q is None else self._order(names, velocity)
        return None if dq is None else (q, dq)


def arm_joints(msg, joint_names) -> tuple[np.ndarray, np.ndarray] | None:
    """``(q, dq)`` of ``joint_names`` from a sensor_msgs/JointState, or None if missing or non-finite."""
    return JointPicker(joint_names)(msg.name, msg.position, msg.velocity)
