"""Client spacecraft simulated relative to a nominal trajectory (seed 004 §III-A).

Frames and symbols (seed 004 Fig. 4):

* ``g_n = pose_nominal_in_orbit``, ``V_n = twist_nominal_body`` — the nominal trajectory;
  here the unforced motion of the client, Eq. (4): ``M_t V_n_dot + C_t(V_n) V_n = 0`` with
  ``V_n(0) = V_t(0)``.
* ``g_c = pose_client_in_nominal``, ``V_c = twist_client_rel_body`` — the relative motion
  commanded to the client robot; ``g_c(0) = I``, ``V_c(0) = 0`` (§III-C).
* ``g_t = pose_client_in_orbit``, ``V_t = twist_client_body`` — the client in orbit,
  recovered by the relative mapping, Eq. (23): ``g_t = g_n g_c``, ``V_t = V_c + Delta V_c``.

The admittance law is Eq. (11)::

    M_t V_c_dot + C_t(V_t) V_t = F_c - M_t Delta V_c_dot
    Delta V_c     = Ad_{g_c^-1} V_n                                  (Eq. 6)
    Delta V_c_dot = Ad_{g_c^-1} V_n_dot - [V_c, Delta V_c]           (d/dt of Eq. 6)

(the last line uses ``d/dt Ad_{g^-1} = -ad_V Ad_{g^-1}`` for ``g_dot = g V^``). ``F_c`` is the
measured wrench in the client body frame about the CoM. All twists are body twists,
linear before angular (:mod:`hil_dynamics.se3`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

import numpy as np
import pinocchio as pin

from hil_dynamics.lie_integrators import rkmk4
from hil_dynamics.rigid_body import RigidBody

# A wrench input: a constant 6-vector held over the step (a sampled sensor), or a function
# of time and the client's orbit pose evaluated at every integrator stage.
WrenchInput = Union[np.ndarray, Callable[[float, pin.SE3], np.ndarray]]


def relative_mapping(pose_nominal_in_orbit: pin.SE3, twist_nominal_body,
                     pose_rel_in_nominal: pin.SE3, twist_rel_body) -> tuple[pin.SE3, np.ndarray]:
    """Seed 004 Eq. (23): ``g = g_n g_rel``, ``V = V_rel + Ad_{g_rel^-1} V_n``.

    Serves the client (``g_c``, ``V_c``) and the servicer base (``g_s``, ``V_s``) alike.
    Returns the pose in orbit and the body twist.
    """
    pose_in_orbit = pose_nominal_in_orbit * pose_rel_in_nominal
    delta = pose_rel_in_nominal.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float))).vector
    return pose_in_orbit, np.asarray(twist_rel_body, dtype=float) + delta


@dataclass
class ClientState:
    """Full state of the relative client simulation at time ``t`` [s]."""

    t: float
    pose_nominal_in_orbit: pin.SE3
    twist_nominal_body: np.ndarray
    pose_client_in_nominal: pin.SE3
    twist_client_rel_body: np.ndarray

    def absolute(self) -> tuple[pin.SE3, np.ndarray]:
        """``(g_t, V_t)`` by Eq. (23)."""
        return relative_mapping(self.pose_nominal_in_orbit, self.twist_nominal_body,
                                self.pose_client_in_nominal, self.twist_client_rel_body)


class ClientAdmittance:
    """Admittance rule of seed 004 Eq. (11), integrated on SE(3) with RKMK4.

    The nominal trajectory (Eq. 4) is integrated in the same step, so the rule is
    self-contained and deterministic: the same inputs give the same commands in the
    ROS node, the lockstep runner and the benchmarks.

    Parameters
    ----------
    body:
        The client's mass properties (``M_t``).
    twist_client_body_0:
        ``V_t(0) = V_n(0)`` [m/s, rad/s], body frame, linear first.
    pose_client_in_orbit_0:
        ``g_t(0) = g_n(0)``; default identity.
    """

    def __init__(self, body: RigidBody, twist_client_body_0, pose_client_in_orbit_0: pin.SE3 | None = None,
                 t0: float = 0.0):
        twist0 = np.asarray(twist_client_body_0, dtype=float).reshape(6)
        if not np.all(np.isfinite(twist0)):
            raise ValueError(f'twist_client_body_0 must be finite, got {twist0.tolist()}')
        self.body = body
        self._minv = body.mass_matrix_inv
        self._inertia = body.inertia
        g0 = pin.SE3.Identity() if pose_client_in_orbit_0 is None else pin.SE3(pose_client_in_orbit_0)
        self.state = ClientState(float(t0), g0, twist0.copy(), pin.SE3.Identity(), np.zeros(6))
        self._v_n = pin.Motion(twist0)
        self._v_c = pin.Motion.Zero()

    # -- Eq. (4) and Eq. (11) as one vector field on (g_n, g_c; V_n, V_c) ----------------
    def _field(self, wrench: WrenchInput):
        minv = self._minv
        inertia = self._inertia
        motion = pin.Motion
        if callable(wrench):
            def wrench_at(t, g_n, g_c):
                return pin.Force(np.asarray(wrench(t, g_n * g_c), dtype=float))
        else:
            held = pin.Force(wrench)

            def wrench_at(t, g_n, g_c):
                return held

        def f(t, poses, vecs):
            g_n, g_c = poses
            v_n, v_c = vecs
            vn_dot = motion(minv @ (-inertia.vxiv(v_n)).vector)                     # Eq. (4)
            delta = g_c.actInv(v_n)                                                 # Eq. (6)
            delta_dot = g_c.actInv(vn_dot) - v_c.cross(delta)                       # d/dt Eq. (6)
            f_c = wrench_at(t, g_n, g_c)
            vc_dot = motion(minv @ (f_c - inertia.vxiv(v_c + delta)).vector) - delta_dot  # Eq. (11)
            return vecs, (vn_dot, vc_dot)

        return f

    def step(self, wrench_client_com: WrenchInput, dt: float) -> ClientState:
        """Advance by ``dt`` [s] under the measured wrench ``F_c`` (client body frame, about the CoM).

        ``wrench_client_com`` is either a 6-vector ``[f; tau]`` held over the step (a
        sampled sensor), or a callable ``(t, pose_client_in_orbit) -> [f; tau]`` evaluated
        at every integrator stage. A rejected input leaves the state untouched.
        """
        if not dt > 0.0:
            raise ValueError(f'dt must be > 0, got {dt!r}')
        if not callable(wrench_client_com):
            wrench_client_com = np.asarray(wrench_client_com, dtype=float).reshape(6)
            if not np.all(np.isfinite(wrench_client_com)):
                raise ValueError(f'wrench must be finite, got {wrench_client_com.tolist()}')
        s = self.state
        (g_n, g_c), (v_n, v_c) = rkmk4(s.t, dt, (s.pose_nominal_in_orbit, s.pose_client_in_nominal),
                                       (self._v_n, self._v_c), self._field(wrench_client_com))
        self._v_n, self._v_c = v_n, v_c
        self.state = ClientState(s.t + dt, g_n, v_n.vector, g_c, v_c.vector)
        return self.state

    # Convenience accessors named after the frames.
    @property
    def pose_client_in_nominal(self) -> pin.SE3:
        return self.state.pose_client_in_nominal

    @property
    def twist_client_rel_body(self) -> np.ndarray:
        return self.state.twist_client_rel_body

    def absolute(self) -> tuple[pin.SE3, np.ndarray]:
        return self.state.absolute()


class AbsoluteRigidBody:
    """Eq. (2) integrated directly in the orbit frame (the "absolute formulation").

    This is what an absolute HIL scheme would command to the robot, and the reference
    the relative formulation is mapped against. Same RKMK4 integrator, no nominal.
    """

    def __init__(self, body: RigidBody, twist_body_0, pose_in_orbit_0: pin.SE3 | None = None, t0: float = 0.0):
        self.body = body
        self.t = float(t0)
        self.pose_in_orbit = pin.SE3.Identity() if pose_in_orbit_0 is None else pin.SE3(pose_in_orbit_0)
        self.twist_body = np.asarray(twist_body_0, dtype=float).reshape(6).copy()

    def step(self, wrench_com: WrenchInput, dt: float) -> None:
        minv, inertia = self.body.mass_matrix_inv, self.body.inertia

        def f(t, poses, vecs):
            w = wrench_com(t, poses[0]) if callable(wrench_com) else wrench_com
            return vecs, (pin.Motion(minv @ (pin.Force(np.asarray(w, dtype=float)) - inertia.vxiv(vecs[0])).vector),)

        (g,), (v,) = rkmk4(self.t, dt, (self.pose_in_orbit,), (pin.Motion(self.twist_body),), f)
        self.t += dt
        self.pose_in_orbit, self.twist_body = g, v.vector
