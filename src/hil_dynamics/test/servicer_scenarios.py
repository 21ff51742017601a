"""Shared scenario for the servicer tests: an Envisat-like client tumbling at 2.5 deg/s
(seed 004 §III-C), the servicer 6 m away co-moving with it, smooth OBSW inputs.

The OBSW joint torque is a joint PD around a slowly varying reference plus a sinusoidal
feed-forward: bounded, smooth arm motion for 60 s (an unactuated arm on a tumbling base
drifts into chaotic motion, where any two integrations part ways).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_dynamics import se3
from hil_dynamics.models import servicer_lbr_urdf, servicer_ssrms_urdf
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.servicer import ServicerModel, servicer_initial_state

CLIENT = RigidBody(8000.0, [17000.0, 124000.0, 129000.0])           # Envisat class (seed 004 §V)
POSE_CLIENT_IN_ORBIT_0 = se3.pose(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), [1.0, 2.0, 3.0])
TWIST_CLIENT_BODY_0 = np.array([0.01, -0.02, 0.005, 0.002, np.deg2rad(-2.5), 0.01])
POSE_BASE_IN_CLIENT_0 = se3.pose(pin.rpy.rpyToMatrix(0.0, 0.3, -0.2), [-6.0, 0.5, -0.4])
POSE_NOMINAL_IN_LAB = se3.pose(pin.rpy.rpyToMatrix(0.05, -0.1, 0.4), [2.0, 0.0, 1.5])

ARMS = {
    'lbr': (servicer_lbr_urdf, 'lbr_flange', np.array([0.3, -0.5, 0.2, 1.2, -0.4, 0.6, 0.1])),
    'ssrms': (servicer_ssrms_urdf, 'ssrms_lee_tip', np.array([0.2, 0.4, -0.6, 1.1, -0.5, 0.3, -0.2])),
}
DQ_0 = np.array([0.02, -0.01, 0.03, 0.0, 0.05, -0.02, 0.01])
_W = np.array([0.31, 0.43, 0.57, 0.71, 0.83, 0.97, 1.13])
_FREQ = np.concatenate((_W, 0.2 * _W, 0.2 * _W))
_PHASE = np.concatenate((np.full(7, 0.3), np.zeros(7), np.full(7, np.pi / 2)))
_DQ_REF_AMP = 0.3 * 0.2 * _W


@dataclass
class Scenario:
    urdf: str
    ee_frame: str
    q0: np.ndarray
    dq0: np.ndarray
    pose_base_in_orbit_0: pin.SE3
    initial: object            # ServicerInitialState
    tau_amp: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    wrench_ee_amp: np.ndarray

    def tau(self, t, q, dq):
        """OBSW joint torque [N m]: PD to ``q_ref = q0 + 0.3 sin(0.2 W t)`` plus ``tau_amp sin(W t + 0.3)``."""
        s = np.sin(_FREQ * t + _PHASE)          # [sin(W t + 0.3), sin(0.2 W t), cos(0.2 W t)]
        return self.tau_amp * s[:7] + self.kp * (self.q0 + 0.3 * s[7:14] - q) + self.kd * (_DQ_REF_AMP * s[14:] - dq)

    @staticmethod
    def wrench_base_com(t):
        """OBSW base wrench F_b [N, N m]."""
        return np.array([20 * np.sin(0.2 * t), -15 * np.cos(0.3 * t), 10 * np.sin(0.5 * t + 1), 5 * np.sin(0.4 * t),
                         -4 * np.cos(0.25 * t), 3 * np.sin(0.6 * t)])

    def wrench_ee(self, t):
        """External wrench on the EE, EE frame [N, N m]."""
        return self.wrench_ee_amp * np.cos(0.7 * t + np.arange(6))


def scenario(arm: str, alpha: float = 0.01) -> Scenario:
    """Inputs scaled to give accelerations of about ``alpha`` [rad/s^2, m/s^2] at the start."""
    urdf_fn, ee, q0 = ARMS[arm]
    urdf = urdf_fn()
    model = ServicerModel(urdf, ee)
    minv = np.linalg.inv(model.mass_matrix(q0))
    jac = model.ee_jacobian(q0)
    m_eff = 1.0 / np.diag(minv)[6:]
    lam = np.linalg.inv(jac @ minv @ jac.T)
    g_t0 = POSE_CLIENT_IN_ORBIT_0
    g_b0 = g_t0 * POSE_BASE_IN_CLIENT_0
    initial = servicer_initial_state(g_t0, TWIST_CLIENT_BODY_0, g_b0)
    return Scenario(urdf, ee, q0.copy(), DQ_0.copy(), g_b0, initial, alpha * m_eff, m_eff, 1.4 * m_eff,
                    alpha * np.diag(lam))
