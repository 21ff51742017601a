"""Small pieces shared by the admittance and OBSW node shells (rclpy-free helpers)."""

from __future__ import annotations

import numpy as np


def arm_joints(msg, joint_names) -> tuple[np.ndarray, np.ndarray] | None:
    """``(q, dq)`` of ``joint_names`` from a sensor_msgs/JointState, or None if missing or non-finite."""
    try:
        index = {name: i for i, name in enumerate(msg.name)}
        q = np.array([msg.position[index[j]] for j in joint_names], dtype=float)
        dq = np.array([msg.velocity[index[j]] for j in joint_names], dtype=float)
    except (KeyError, IndexError):
        return None
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
        return None
    return q, dq


def guarded(tick, context):
    """Run ``tick()``; an exception while ``context`` is shutting down (a publish racing SIGTERM) is ignored."""
    try:
        tick()
    except Exception:  # noqa: BLE001 - re-raised unless the context is already shut down
        if context.ok():
            raise
