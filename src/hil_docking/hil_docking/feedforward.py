"""Feed-forward control variants of the CISAS arm along the CW manoeuvre (seed 003 §VI, Figs. 7-8).

* ``newton_euler``: the exact inverse dynamics, seed 003 Eqs. (3)-(4) (Luh-Walker recursion;
  Pinocchio's RNEA is that recursion in spatial-vector form);
* ``lagrange_mg``: ``M(q) q'' + G(q)`` (Eq. 6 without ``V``; Fig. 7b, SW = 1);
* ``lagrange_g``: ``G(q)`` only (Fig. 7b, SW = 0).

Each runs with the same feedback compensator ``Kp (q_r - q) + Kd (q_r' - q')``, the seed's
constant gains ``Kp = 50``, ``Kd = 0.01``; as in the seed, the computation time is modelled by
holding the torque for one iteration time (the seed's 2.3, 2.1, 1.1 ms). The plant is the
same arm (perfect model knowledge, footnote 7), integrated with RK4 on Pinocchio's ABA.

Reference (§III and §VI-A): the tool flange follows ``p(t) = p_dock + dr(t)`` of the CW
transfer (lab axes = LVLH axes, 1:1), orientation held; joint positions by the motion-table
IK, rates and accelerations by differential kinematics, Eq. (2):
``q' = J^-1 [v; 0]``, ``q'' = J^-1 ([a; 0] - J' q')``. The arm starts on the reference with
the post-burn velocity (the burns are impulses in orbit).
Plain Python (Pinocchio); no rclpy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_docking.cw import CWModel, TwoImpulseTransfer
from hil_motion_table.kinematics import SerialKinematics
from hil_common.errors import ConfigError, Unreachable

FEEDFORWARDS = ('newton_euler', 'lagrange_mg', 'lagrange_g')
SEED_ITERATION_TIME_S = {'newton_euler': 2.3e-3, 'lagrange_mg': 2.1e-3, 'lagrange_g': 1.1e-3}
SEED_KP, SEED_KD = 50.0, 0.01


@dataclass
class JointReference:
    t: np.ndarray          # (n,)
    q: np.ndarray          # (n, 6)
    qd: np.ndarray
    qdd: np.ndarray
    p_flange: np.ndarray   # (n, 3) commanded flange position in the arm base frame


def cw_joint_reference(kin: SerialKinematics, model: CWModel, transfer: TwoImpulseTransfer, p_dock_in_base,
                       rotation_flange_in_base: np.ndarray, dt: float, q_seed=None) -> JointReference:
    """The CW coasting arc ``0 <= t <= tf`` as a joint trajectory sampled every ``dt``."""
    n = int(round(transfer.tf / dt)) + 1
    ts = np.linspace(0.0, transfer.tf, n)
    pin_model, data, fid = kin.model, kin.data, kin.frame_id
    q = np.array(kin.spec.q_home if q_seed is None else q_seed, dtype=float)
    out_q, out_qd, out_qdd, out_p = (np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 3)))
    p_dock = np.asarray(p_dock_in_base, dtype=float)
    for i, t in enumerate(ts):
        s = transfer.state_at(model, t)
        accel = model.derivative(s)[3:6]                 # Eq. (11), unforced arc
        p = p_dock + s[0:3]
        ik = kin.inverse(pin.SE3(rotation_flange_in_base, p), q)
        if not ik.converged or ik.sigma_min < 1e-3:
            raise Unreachable(f'reference not reachable at t = {t:.3f} s (IK error {ik.error:.2e}, '
                             f'sigma_min {ik.sigma_min:.2e}); move p_dock_in_base')
        q = ik.q
        jac = pin.computeFrameJacobian(pin_model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        qd = np.linalg.solve(jac, np.concatenate([s[3:6], np.zeros(3)]))                      # Eq. (2)
        pin.forwardKinematics(pin_model, data, q, qd, np.zeros(6))
        drift = pin.getFrameClassicalAcceleration(pin_model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        qdd = np.linalg.solve(jac, np.concatenate([accel, np.zeros(3)]) - drift)
        out_q[i], out_qd[i], out_qdd[i], out_p[i] = q, qd, qdd, p
    return JointReference(ts, out_q, out_qd, out_qdd, out_p)


def damped_kd(pin_model: pin.Model, q, kp: float = SEED_KP, zeta: float = 0.7) -> np.ndarray:
    """Per-joint ``Kd = 2 zeta sqrt(Kp M_ii(q))``: the damping the seed's ``Kd = 0.01`` lacks on our model."""
    data = pin_model.createData()
    mass = pin.crba(pin_model, data, np.asarray(q, dtype=float))
    return 2.0 * zeta * np.sqrt(kp * np.diag(mass))


class FeedForward:
    """One of :data:`FEEDFORWARDS` on a Pinocchio model (its own data)."""

    def __init__(self, pin_model: pin.Model, variant: str):
        if variant not in FEEDFORWARDS:
            raise ConfigError(f'variant must be one of {FEEDFORWARDS}, got {variant!r}')
        self.model, self.data, self.variant = pin_model, pin_model.createData(), variant

    def torque(self, q, qd, qdd) -> np.ndarray:
        if self.variant == 'newton_euler':
            return pin.rnea(self.model, self.data, q, qd, qdd).copy()
        g = pin.computeGeneralizedGravity(self.model, self.data, q).copy()
        if self.variant == 'lagrange_g':
            return g
        mass = pin.crba(self.model, self.data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T              # crba fills the upper triangle
        return mass @ qdd + g


@dataclass
class TrackingRun:
    variant: str
    iteration_time_s: float
    t: np.ndarray              # control instants
    q_error: np.ndarray        # (n, 6) q_ref - q [rad] at the control instants
    tau: np.ndarray            # (n, 6) commanded torques

    @property
    def max_error_deg(self) -> np.ndarray:
        return np.degrees(np.abs(self.q_error).max(axis=0))


def simulate_tracking(pin_model: pin.Model, reference: JointReference, variant: str, iteration_time_s: float,
                      kp: float = SEED_KP, kd: float = SEED_KD, max_substep_s: float = 0.5e-3) -> TrackingRun:
    """Track ``reference`` with feed-forward ``variant`` + PD, the torque held ``iteration_time_s``.

    The reference is sampled (linear interpolation) at the control instants ``k T``; the plant
    is integrated with RK4 substeps of at most ``max_substep_s`` inside each hold.
    """
    if not iteration_time_s > 0.0:
        raise ConfigError(f'iteration_time_s must be > 0, got {iteration_time_s!r}')
    ff = FeedForward(pin_model, variant)
    data = pin_model.createData()
    ts = np.arange(0.0, reference.t[-1] + 1e-12, iteration_time_s)
    interp = [lambda t, a=a: np.array([np.interp(t, reference.t, a[:, j]) for j in range(6)])
              for a in (reference.q, reference.qd, reference.qdd)]
    q, qd = reference.q[0].copy(), reference.qd[0].copy()
    n_sub = int(np.ceil(iteration_time_s / max_substep_s))
    h = iteration_time_s / n_sub
    errors, taus = np.empty((ts.size, 6)), np.empty((ts.size, 6))

    def accel(q_, qd_, tau_):
        return pin.aba(pin_model, data, q_, qd_, tau_).copy()
    for i, t in enumerate(ts):
        q_r, qd_r, qdd_r = (f(t) for f in interp)
        tau = ff.torque(q_r, qd_r, qdd_r) + kp * (q_r - q) + kd * (qd_r - qd)
        errors[i], taus[i] = q_r - q, tau
        for _ in range(n_sub):
            k1v, k1a = qd, accel(q, qd, tau)
            k2v = qd + 0.5 * h * k1a
            k2a = accel(q + 0.5 * h * k1v, k2v, tau)
            k3v = qd + 0.5 * h * k2a
            k3a = accel(q + 0.5 * h * k2v, k3v, tau)
            k4v = qd + h * k3a
            k4a = accel(q + h * k3v, k4v, tau)
            q = q + h / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
            qd = qd + h / 6.0 * (k1a + 2 * k2a + 2 * k3a + k4a)
    return TrackingRun(variant, float(iteration_time_s), ts, errors, taus)


def time_per_iteration_s(pin_model: pin.Model, reference: JointReference, variant: str, repeats: int = 2000) -> float:
    """Median wall time of one feed-forward evaluation (Python call into Pinocchio) [s]."""
    ff = FeedForward(pin_model, variant)
    idx = np.linspace(0, reference.t.size - 1, repeats).astype(int)
    samples = np.empty(repeats)
    clock = time.perf_counter
    for r, i in enumerate(idx):
        q, qd, qdd = reference.q[i], reference.qd[i], reference.qdd[i]
        t0 = clock()
        ff.torque(q, qd, qdd)
        samples[r] = clock() - t0
    return float(np.median(samples))
