"""Camera-frame joint control of seed 000 §3.3 (plain Python, no rclpy).

``qd_dot = J_c(q_a)^+ [v_e^d; w_e^d]`` (Eq. 6), with ``J_c`` the Jacobian of the LEE camera
frame expressed in that frame (Pinocchio ``LOCAL``; we take the camera frame as the LEE frame),
``q_d = ∫ qd_dot dt``, and the joint PD ``tau_c = k_p (q_d - q_a) + k_d (qd_dot - q_a_dot)``
(Eq. 7), k_p = 120 N m/rad and k_d = 240 N m s/rad (Table 4). The controller is sampled: it
runs every ``period_s`` and its torque is held in between (zero-order hold).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError


class CameraFrameController:
    def __init__(self, model: pin.Model, q0, kp_nm_per_rad: float = 120.0, kd_nms_per_rad: float = 240.0,
                 frame: str = 'lee', joint_slice: slice = slice(None)):
        if kp_nm_per_rad < 0.0 or kd_nms_per_rad < 0.0:
            raise ConfigError(f'kp and kd must be >= 0, got {kp_nm_per_rad!r}, {kd_nms_per_rad!r}')
        self.model = model
        self.data = model.createData()
        self.frame_id = model.getFrameId(frame)
        self.kp = float(kp_nm_per_rad)
        self.kd = float(kd_nms_per_rad)
        self.joints = joint_slice
        self.q_d = np.array(q0, dtype=float)[joint_slice].copy()
        self.qd_dot = np.zeros_like(self.q_d)

    def desired_rate(self, q_full, twist_cmd_camera) -> np.ndarray:
        """Eq. (6): joint rates for the commanded LEE twist ``[v; w]`` in the camera frame."""
        jac = pin.computeFrameJacobian(self.model, self.data, np.asarray(q_full, dtype=float), self.frame_id,
                                       pin.LOCAL)[:, self.joints]
        return np.linalg.pinv(jac, rcond=1e-6) @ np.asarray(twist_cmd_camera, dtype=float)

    def update(self, dt_s: float, q_full, v_full, twist_cmd_camera=None) -> np.ndarray:
        """Advance ``q_d`` by one controller period and return ``tau_c`` (Eq. 7)."""
        if twist_cmd_camera is None or not np.any(twist_cmd_camera):
            self.qd_dot = np.zeros_like(self.q_d)
        else:
            self.qd_dot = self.desired_rate(q_full, twist_cmd_camera)
        q_a = np.asarray(q_full, dtype=float)[-self.q_d.size:]
        dq_a = np.asarray(v_full, dtype=float)[-self.q_d.size:]
        tau = self.kp * (self.q_d - q_a) + self.kd * (self.qd_dot - dq_a)
        self.q_d = self.q_d + self.qd_dot * dt_s
        return tau
