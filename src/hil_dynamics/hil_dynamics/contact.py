"""Gripper-to-grasp-fixture attachment (seed 004 §III-C Assumption 3, §IV-B).

The servicer's gripper (its tool frame ``tcp``) closes on the client's grasp fixture (the
launch adapter ring, frame ``grasp``). After closure the two are held together by a stiff
6-DOF spring-damper about the relative pose at the instant of latching (the gripper jaws
absorb the residual misalignment; the mechanism is then rigid up to its compliance).

Only the *relative* pose and twist of the two frames enter, so the same rule serves the
HIL loop (poses of the two lab robots relative to the common nominal frame, seed 004
Eq. 23 shows they differ from the orbit ones by the same left factor ``g_n``) and the
absolute reference (orbit poses). Wrenches obey Assumption 3: the client receives exactly
the opposite of the wrench on the gripper (``F_t = -F_e`` about the same point).

Conventions (:mod:`hil_dynamics.se3`): body twists and wrenches linear first;
``wrench_tcp_in_tcp`` is the wrench on the gripper in tool axes about the tool origin.
Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError

OPEN, CLOSING, LATCHED, MISSED = 'open', 'closing', 'latched', 'missed'


@dataclass
class ContactParams:
    """Spring-damper of the closed gripper and the closing mechanism."""

    stiffness_linear_n_m: float = 2.0e5
    stiffness_angular_nm_rad: float = 2.0e3
    damping_linear_ns_m: float = 2.0e3
    damping_angular_nms_rad: float = 40.0
    closing_time_s: float = 0.5
    capture_radius_m: float = 0.02        # the jaws only catch the fixture within this distance ...
    capture_angle_rad: float = 0.0873     # ... and this misalignment (5 deg)

    def __post_init__(self):
        for name, value in vars(self).items():
            if not np.isfinite(value) or value < 0.0:
                raise ConfigError(f'{name} must be finite and >= 0, got {value!r}')


def relative_twist(pose_b_in_a: pin.SE3, twist_a_body, twist_b_body) -> np.ndarray:
    """Body twist of frame b relative to frame a, in b axes: ``V_b - Ad_{g_ab^-1} V_a``."""
    return np.asarray(twist_b_body, dtype=float) - pose_b_in_a.actInv(pin.Motion(np.asarray(twist_a_body, dtype=float))).vector


class GraspContact:
    """Gripper state machine and the attachment wrench.

    ``command_close(t)`` starts closing; after ``closing_time_s`` the gripper latches if the
    tool is within the capture envelope of its nominal grasp pose ``pose_tool_at_grasp_in_grasp`` (else the attempt is ``missed`` and the gripper is
    open again). While latched, :meth:`wrench` returns the spring-damper wrench on the tool.
    """

    def __init__(self, params: ContactParams | None = None, pose_tool_at_grasp_in_grasp: pin.SE3 | None = None):
        self.params = params or ContactParams()
        # Nominal tool pose in the fixture frame when the jaws are centred on the fixture.
        self.pose_tool_at_grasp_in_grasp = (pin.SE3.Identity() if pose_tool_at_grasp_in_grasp is None
                                            else pin.SE3(pose_tool_at_grasp_in_grasp))
        p = self.params
        self.stiffness = np.array([p.stiffness_linear_n_m] * 3 + [p.stiffness_angular_nm_rad] * 3)   # K [N/m, N m/rad]
        self.damping = np.array([p.damping_linear_ns_m] * 3 + [p.damping_angular_nms_rad] * 3)        # D [N s/m, N m s/rad]
        self.state = OPEN
        self.close_time_s: float | None = None
        self.latch_time_s: float | None = None
        self.pose_tcp_in_grasp_rest: pin.SE3 | None = None

    def command_close(self, t: float) -> None:
        if self.state == OPEN or self.state == MISSED:
            self.state, self.close_time_s = CLOSING, float(t)

    def command_open(self) -> None:
        self.state, self.pose_tcp_in_grasp_rest = OPEN, None

    @property
    def latched(self) -> bool:
        return self.state == LATCHED

    def update(self, t: float, pose_tcp_in_grasp: pin.SE3) -> str:
        """Advance the closing mechanism to time ``t`` with the current tool pose in the fixture frame."""
        if self.state == CLOSING and t >= self.close_time_s + self.params.closing_time_s - 1e-12:
            err = self.pose_tool_at_grasp_in_grasp.actInv(pose_tcp_in_grasp)
            angle = float(np.linalg.norm(pin.log3(err.rotation)))
            if np.linalg.norm(err.translation) <= self.params.capture_radius_m and angle <= self.params.capture_angle_rad:
                self.state, self.latch_time_s = LATCHED, float(t)
                self.pose_tcp_in_grasp_rest = pin.SE3(pose_tcp_in_grasp)
            else:
                self.state = MISSED
        return self.state

    def wrench(self, pose_tcp_in_grasp: pin.SE3, twist_tcp_rel_grasp_body) -> np.ndarray:
        """Wrench on the tool [f; tau] (tool axes, about the tool origin); zero unless latched.

        ``twist_tcp_rel_grasp_body`` is the tool's body twist relative to the fixture, in tool
        axes (:func:`relative_twist` with a = grasp, b = tcp).
        """
        if self.state != LATCHED:
            return np.zeros(6)
        # Deviation of the tool from its latched rest pose, as a twist in tool axes.
        err = pin.log6(self.pose_tcp_in_grasp_rest.actInv(pose_tcp_in_grasp)).vector
        return -self.stiffness * err - self.damping * np.asarray(twist_tcp_rel_grasp_body, dtype=float)


def reaction_on_client(pose_tcp_in_client: pin.SE3, wrench_tcp_in_tcp) -> np.ndarray:
    """Assumption 3: the wrench on the client CoM (client body axes) opposite to the one on the tool."""
    return -pose_tcp_in_client.act(pin.Force(np.asarray(wrench_tcp_in_tcp, dtype=float))).vector
