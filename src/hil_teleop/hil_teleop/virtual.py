"""Virtual arm and virtual massive payload on earth: seed 001 Eqs. (4)-(10).

Every sampling period ``dt`` (:meth:`VirtualEnvironment.step`):

1. Virtual contact, Eq. (7), from the previous sample::

       f_vir(t) = K_t B(phi_t) (x_vir(t-dt) - x_t(t-dt)) + D_t (v_vir(t-dt) - v_t(t-dt))

   ``f_vir`` is the wrench the virtual arm applies **to the payload** (about the grip point,
   world axes). Eq. (7) as printed carries a minus sign, i.e. it gives the reaction on the
   arm; Eqs. (5) and (8) only make sense (a pull accelerates the payload forward, and
   ``- K_s f_vir`` slows the arm) with the force on the payload, which is also the sign of
   the slave's ``f_s`` in Eq. (3). We use that one consistently.
2. Payload, Eqs. (8)-(10), semi-implicit Euler as printed::

       v_t_dot = M^-1 (f_vir - [0; omega x I_w omega]),  M = diag(m E, I_w),  I_w = R I R^T
       v_t(t)  = v_t(t-dt) + v_t_dot dt
       x_t(t)  = x_t(t-dt) + B^-1(phi_t) v_t(t) dt

   ``I`` is the full 3x3 inertia tensor (body axes); with the world-frame angular velocity
   the tensor is rotated into the world (``I_w``) and the gyroscopic term is kept so the
   torque-free payload conserves its angular momentum (Eq. 8 omits it: exact only at rest).
   The grip point is the payload's CoM in the virtual model, as in Eq. (7)-(8).
3. Virtual arm, Eqs. (4)-(6): ``v_vir,r = K_s G f_m`` (Eq. 4),
   ``v_vir = v_vir,c = v_vir,r - K_s f_vir(t) - D (v_vir(t-dt) - v_vir(t-2dt))`` (Eq. 5,
   ``v_vir ~= v_vir,c`` by Appendix A), ``x_vir(t) = x_vir(t-dt) + B^-1 v_vir(t) dt`` (Eq. 6).

Velocities are world-aligned ``[r_dot; omega_world]`` and positions ``[r; phi]``
(:mod:`hil_teleop.coordinates`). Plain Python, no rclpy.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import cross3
from hil_teleop.coordinates import GIMBAL_LOCK_COS, b_inverse, b_matrix, integrate_position, position_difference
from hil_teleop.gains import TeleopGains, diag6
from hil_teleop.virtual_kernel import GIMBAL_LOCK_PAYLOAD, OK, virtual_step
from hil_common.errors import ConfigError, InputError, Unreachable


@dataclass
class VirtualContact:
    """Spring-damper of Eq. (7): ``k_t`` [N/m, N m/rad], ``d_t`` [N s/m, N m s/rad] (diagonals)."""

    k_t: np.ndarray
    d_t: np.ndarray

    def __post_init__(self):
        self.k_t = diag6('k_t', self.k_t)
        self.d_t = diag6('d_t', self.d_t)


class VirtualPayload:
    """The virtual massive payload of Eqs. (8)-(10) with the full 6x6 ``M``."""

    def __init__(self, mass_kg: float, inertia_body_kgm2, x0=None):
        body = RigidBody(mass_kg, inertia_body_kgm2)   # validates mass and inertia (SPD, triangle inequality)
        self.mass_kg = body.mass_kg
        self.inertia_body = body.inertia_com_kgm2
        self._inertia_inv = np.linalg.inv(self.inertia_body)
        self.x = np.zeros(6) if x0 is None else np.asarray(x0, dtype=float).copy()
        self.v = np.zeros(6)

    def mass_matrix(self) -> np.ndarray:
        """``M = diag(m E, I_w)`` of Eq. (8), the inertia rotated into world axes."""
        r = pin.rpy.rpyToMatrix(self.x[3:])
        out = np.zeros((6, 6))
        out[:3, :3] = self.mass_kg * np.eye(3)
        out[3:, 3:] = r @ self.inertia_body @ r.T
        return out

    def acceleration(self, wrench_world) -> np.ndarray:
        """Eq. (8) plus the gyroscopic torque: ``M^-1 (f - [0; w x I_w w])``, ``I_w^-1 = R I^-1 R^T``."""
        r = pin.rpy.rpyToMatrix(self.x[3:])
        w = self.v[3:]
        wrench_world = np.asarray(wrench_world, dtype=float)
        w_body = r.T @ w
        torque_body = r.T @ wrench_world[3:] - cross3(w_body, self.inertia_body @ w_body)
        acc = np.empty(6)
        acc[:3] = wrench_world[:3] / self.mass_kg
        acc[3:] = r @ (self._inertia_inv @ torque_body)
        return acc

    def step(self, wrench_world, dt: float) -> None:
        """Eqs. (9)-(10)."""
        self.v = self.v + self.acceleration(wrench_world) * dt
        self.x = integrate_position(self.x, self.v, dt)

    def momentum_world(self) -> np.ndarray:
        """``[m r_dot; I_w omega]`` (angular momentum about the CoM, world axes)."""
        return self.mass_matrix() @ self.v


@dataclass
class VirtualState:
    t: float
    x_vir: np.ndarray
    v_vir: np.ndarray
    f_vir: np.ndarray
    x_t: np.ndarray
    v_t: np.ndarray
    v_vir_r: np.ndarray


class VirtualEnvironment:
    """Virtual arm gripping the virtual payload (Eqs. 4-10), advanced by :meth:`step`."""

    def __init__(self, gains: TeleopGains, payload: VirtualPayload, contact: VirtualContact, dt: float, x0=None):
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        self.gains, self.payload, self.contact, self.dt = gains, payload, contact, float(dt)
        self.t = 0.0
        self.x_vir = payload.x.copy() if x0 is None else np.asarray(x0, dtype=float).copy()
        self.v_vir = np.zeros(6)        # v_vir(t - dt)
        self.v_vir_prev = np.zeros(6)   # v_vir(t - 2 dt)
        self.f_vir = np.zeros(6)
        # Load the compiled step now (from the cache ./dev fills), not in a node's first real-time tick:
        # one dry step on copies of the state, whose result is dropped.
        copy.deepcopy(self).step(np.zeros(6))

    def contact_wrench(self) -> np.ndarray:
        """Eq. (7) on the previous sample (force on the payload, see the module docstring)."""
        p = self.payload
        return (self.contact.k_t * (b_matrix(p.x[3:]) @ position_difference(self.x_vir, p.x))
                + self.contact.d_t * (self.v_vir - p.v))

    def step(self, f_m) -> VirtualState:
        """Eqs. (4)-(10) for one sample: :meth:`step_reference` in one compiled call
        (:func:`hil_teleop.virtual_kernel.virtual_step`, tested against it to 1e-12)."""
        f_m = np.asarray(f_m, dtype=float).reshape(6)
        if not np.all(np.isfinite(f_m)):
            raise InputError(f'f_m must be finite, got {f_m.tolist()}')
        g, p, dt = self.gains, self.payload, self.dt
        x_vir, v, x_t, v_t, f_vir, v_r = (np.empty(6) for _ in range(6))
        code = virtual_step(self.x_vir, self.v_vir, self.v_vir_prev, p.x, p.v, f_m, self.contact.k_t, self.contact.d_t,
                            g.k_s * g.g_eff, g.k_s_feedback, g.d_eff, p.mass_kg, p.inertia_body, p._inertia_inv, dt,
                            GIMBAL_LOCK_COS, x_vir, v, x_t, v_t, f_vir, v_r)
        if code != OK:
            phi = (p.x if code == GIMBAL_LOCK_PAYLOAD else self.x_vir)[3:]
            b_inverse(phi)                        # raises Unreachable, naming the pitch
            raise Unreachable(f'gimbal lock at pitch {phi[1]!r}')   # (not reached: b_inverse raises first)
        self.f_vir = f_vir
        p.x, p.v = x_t, v_t
        self.v_vir_prev, self.v_vir = self.v_vir, v
        self.x_vir = x_vir
        self.t += dt
        return VirtualState(self.t, x_vir.copy(), v.copy(), f_vir.copy(), x_t.copy(), v_t.copy(), v_r)

    def step_reference(self, f_m) -> VirtualState:
        """Eqs. (4)-(10), readable (see the module docstring)."""
        f_m = np.asarray(f_m, dtype=float).reshape(6)
        if not np.all(np.isfinite(f_m)):
            raise InputError(f'f_m must be finite, got {f_m.tolist()}')
        g, dt = self.gains, self.dt
        self.f_vir = f_vir = self.contact_wrench()                                 # Eq. (7)
        self.payload.step(f_vir, dt)                                               # Eqs. (8)-(10)
        v_r = g.reference_velocity(f_m)                                            # Eq. (4)
        v = v_r - g.k_s_feedback * f_vir - g.d_eff * (self.v_vir - self.v_vir_prev)  # Eq. (5)
        self.v_vir_prev, self.v_vir = self.v_vir, v
        self.x_vir = integrate_position(self.x_vir, v, dt)                         # Eq. (6)
        self.t += dt
        return VirtualState(self.t, self.x_vir.copy(), v.copy(), f_vir.copy(), self.payload.x.copy(),
                            self.payload.v.copy(), v_r)
