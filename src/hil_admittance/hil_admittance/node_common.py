"""Small pieces shared by the admittance and OBSW node shells (rclpy-free helpers)."""

from __future__ import annotations

import numpy as np


class JointPicker:
    """``(q, dq)`` of ``joint_names`` from a joint state's names, positions and velocities, or None if
    one is missing or non-finite; the index is worked out again only when the names change."""

    def __init__(self, joint_names):
        self.joint_names = tuple(joint_names)
        self._names = None
        self._index: np.ndarray | None = None

    def __call__(self, names, position, velocity) -> tuple[np.ndarray, np.ndarray] | None:
        names = tuple(names)
        if names != self._names:
            where = {name: i for i, name in enumerate(names)}
            self._names = names
            self._index = None if any(j not in where for j in self.joint_names) else \
                np.array([where[j] for j in self.joint_names], dtype=np.intp)
        if self._index is None:
            return None
        position, velocity = np.asarray(position, dtype=float), np.asarray(velocity, dtype=float)
        if len(position) != len(names) or len(velocity) != len(names):
            return None
        q, dq = position[self._index], velocity[self._index]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
            return None
        return q, dq


def arm_joints(msg, joint_names) -> tuple[np.ndarray, np.ndarray] | None:
    """``(q, dq)`` of ``joint_names`` from a sensor_msgs/JointState, or None if missing or non-finite."""
    return JointPicker(joint_names)(msg.name, msg.position, msg.velocity)
