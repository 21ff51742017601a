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

import threading
from typing import Callable, Union

import numpy as np
import pinocchio as pin

from hil_dynamics import kernels
from hil_dynamics.lie_integrators import dexp_inv, rkmk4
from hil_dynamics.rigid_body import RigidBody
from hil_common.errors import ConfigError, InputError
from hil_common.finite import all_finite

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


#: per thread: ``id(body)`` -> the integrator whose constants :func:`unforced_nominal` steps with, at most
#: ``_FREE_INTEGRATORS_KEPT`` of them (an integrator holds its body, so weak keys would never let one go)
_free_integrators = threading.local()
_FREE_INTEGRATORS_KEPT = 8


def unforced_nominal(body: RigidBody, pose_nominal_in_orbit: pin.SE3, twist_nominal_body, duration_s: float,
                     dt_s: float) -> tuple[pin.SE3, np.ndarray]:
    """The nominal ``(g_n, V_n)`` ``duration_s`` later: the unforced motion of ``body`` (Eq. 4) from the
    given state, in RKMK4 steps of ``dt_s`` (the last one shorter), as the admittances integrate it."""
    duration_s, dt_s = float(duration_s), float(dt_s)
    if not (np.isfinite(duration_s) and duration_s >= 0.0) or not dt_s > 0.0:
        raise ConfigError(f'duration_s must be >= 0 and dt_s > 0, got {duration_s!r}, {dt_s!r}')
    twist = np.array(twist_nominal_body, dtype=float).reshape(6)
    if not all_finite(twist):
        raise ConfigError(f'twist_nominal_body must be finite, got {twist.tolist()}')
    g_n = kernels.pose_array(pin.SE3(pose_nominal_in_orbit))
    kernels.unforced_nominal_over(g_n, twist, np.empty(12), np.empty(6), np.empty(6), *unforced_nominal_constants(body),
                                  dt_s, duration_s)
    return kernels.array_pose(g_n), twist


def unforced_nominal_constants(body: RigidBody) -> tuple:
    """The constants :func:`unforced_nominal` steps ``body``'s unforced motion with
    (:func:`hil_dynamics.kernels.unforced_nominal_steps`' ``mass, inertia, inertia_inv, nom_m6, nom_m6_inv``), for a
    compiled caller that moves a nominal on as it does (a held servicer sample in a sample loop)."""
    # One integrator per body and thread, for its constants: a node that holds, or drops steps, calls this
    # at every step, and building an admittance costs several of its steps (docs/performance.md, "Tenth
    # session"). Its steps on the given state run in one compiled call (kernels.unforced_nominal_steps): the
    # integrator's restart and steps through Python took 41.8 us for one step and 258 us for 20, the one call
    # 34.3 and 93.2 us (twenty-sixth session).
    cache = getattr(_free_integrators, 'by_body', None)
    if cache is None:
        cache = _free_integrators.by_body = {}
    free = cache.get(id(body))
    if free is None or free.body is not body:      # (an entry keeps its body alive: its id is not reused)
        free = ClientAdmittance(body, np.zeros(6), pin.SE3.Identity())
        if len(cache) >= _FREE_INTEGRATORS_KEPT:    # a re-basing ramp makes a new body every step: bounded
            cache.clear()
        cache[id(body)] = free
    return free._mass, free._inertia9, free._inertia_inv9, body.mass_matrix, body.mass_matrix_inv


class RelativeState:
    """An admittance's state at time ``t`` [s]: the nominal ``(g_n, V_n)`` and the motion relative to it
    ``(g_rel, V_rel)``, whose Eq. (23) map :meth:`absolute` gives.

    The poses read as ``pin.SE3``. A compiled step stores them as the 12-arrays it computed
    (:func:`hil_dynamics.kernels.pose_array` layout, :meth:`of_arrays`), and each ``pin.SE3`` is built when it
    is first read: a 1 kHz step whose poses nobody reads builds none, and the next compiled step takes the
    arrays back (:meth:`pose_arrays`) without converting. A state is a snapshot: the steps never write into
    the arrays or poses of a state they made (docs/performance.md).
    """

    __slots__ = ('t', 'twist_nominal_body', '_twist_rel', '_se3', '_arr')

    def __init__(self, t: float, pose_nominal_in_orbit: pin.SE3, twist_nominal_body, pose_rel_in_nominal: pin.SE3,
                 twist_rel_body):
        self.t = t
        self.twist_nominal_body = twist_nominal_body
        self._twist_rel = twist_rel_body
        self._se3 = [pose_nominal_in_orbit, pose_rel_in_nominal]
        self._arr = [None, None]

    @classmethod
    def of_arrays(cls, t: float, pose_nominal_in_orbit: np.ndarray, twist_nominal_body: np.ndarray,
                  pose_rel_in_nominal: np.ndarray, twist_rel_body: np.ndarray):
        """The state from 12-array poses (kept, not copied: the caller hands them over)."""
        state = cls.__new__(cls)
        state.t, state.twist_nominal_body, state._twist_rel = t, twist_nominal_body, twist_rel_body
        state._se3 = [None, None]
        state._arr = [pose_nominal_in_orbit, pose_rel_in_nominal]
        return state

    def _pose(self, i: int) -> pin.SE3:
        g = self._se3[i]
        if g is None:
            g = self._se3[i] = kernels.array_pose(self._arr[i])
        return g

    def pose_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(g_n, g_rel)`` as 12-arrays (read only)."""
        arr = self._arr
        if arr[0] is None:
            arr[0] = kernels.pose_array(self._se3[0])
        if arr[1] is None:
            arr[1] = kernels.pose_array(self._se3[1])
        return arr[0], arr[1]

    @property
    def pose_nominal_in_orbit(self) -> pin.SE3:
        """``g_n``."""
        return self._pose(0)

    def absolute(self) -> tuple[pin.SE3, np.ndarray]:
        """``(g, V)`` in orbit by Eq. (23) (:func:`relative_mapping`, on the arrays)."""
        g, v = self.absolute_arrays()
        return kernels.array_pose(g), v

    def absolute_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`absolute` with the pose as a 12-array."""
        g_n, g_rel = self.pose_arrays()
        g, v = np.empty(12), np.empty(6)
        kernels.relative_mapping_into(g_n, np.asarray(self.twist_nominal_body, dtype=float), g_rel,
                                      np.asarray(self._twist_rel, dtype=float), g, v)
        return g, v

    def load_kernels(self) -> None:
        """Load the compiled kernels of :meth:`absolute_arrays` and :meth:`with_nominal_twist` (cached on disk) now,
        not in a node's first tick or a re-basing's first step: both are called and their results thrown away."""
        self.absolute_arrays()
        self.with_nominal_twist(self.twist_nominal_body)

    def with_nominal_twist(self, twist_nominal_body: np.ndarray):
        """This state re-based onto a nominal of the same pose and another twist ``V_n'`` (Eq. 23 unchanged):
        ``g_rel`` stays, ``V_rel' = V_rel + Ad_{g_rel^-1} (V_n - V_n')``
        (:func:`hil_dynamics.kernels.nominal_twist_change_into`; :func:`hil_dynamics.rebase.rebase_relative`
        with ``g_n' = g_n`` is its readable form). A twist that is not 6 finite numbers raises InputError."""
        twist_nominal_body = np.array(twist_nominal_body, dtype=float).reshape(-1)
        if twist_nominal_body.shape != (6,) or not np.isfinite(twist_nominal_body).all():
            raise InputError(f'twist_nominal_body must be 6 finite numbers, got {twist_nominal_body.tolist()}')
        v_rel = np.empty(6)
        kernels.nominal_twist_change_into(self.pose_arrays()[1], np.asarray(self._twist_rel, dtype=float),
                                          np.asarray(self.twist_nominal_body, dtype=float), twist_nominal_body, v_rel)
        return self.with_twists(twist_nominal_body, v_rel)

    def with_twists(self, twist_nominal_body: np.ndarray, twist_rel_body: np.ndarray):
        """:meth:`with_nominal_twist` with ``V_rel'`` already computed with ``V_n'`` (a re-basing ramp's one compiled
        call, :func:`hil_dynamics.kernels.rebase_ramp_step`, which also checks both are finite): the arrays are
        kept, not copied."""
        g_n, g_rel = self.pose_arrays()
        state = type(self).of_arrays(self.t, g_n, twist_nominal_body, g_rel, twist_rel_body)
        state._se3 = list(self._se3)      # the same poses: those already built are shared
        return state

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(t={self.t!r}, pose_nominal_in_orbit={self._pose(0)!r}, '
                f'twist_nominal_body={self.twist_nominal_body!r}, {self.REL_NAMES[0]}={self._pose(1)!r}, '
                f'{self.REL_NAMES[1]}={self._twist_rel!r})')

    REL_NAMES = ('pose_rel_in_nominal', 'twist_rel_body')


class ClientState(RelativeState):
    """Full state of the relative client simulation at time ``t`` [s]: ``g_n, V_n, g_c, V_c``
    (:class:`RelativeState`; ``absolute()`` is ``(g_t, V_t)`` by Eq. 23)."""

    __slots__ = ()
    REL_NAMES = ('pose_client_in_nominal', 'twist_client_rel_body')

    @property
    def pose_client_in_nominal(self) -> pin.SE3:
        """``g_c``."""
        return self._pose(1)

    @property
    def twist_client_rel_body(self) -> np.ndarray:
        """``V_c``."""
        return self._twist_rel


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
        self.body = body
        self._minv = body.mass_matrix_inv
        self._inertia = body.inertia
        twist0 = self.restart(twist_client_body_0, pose_client_in_orbit_0, t0)
        # The compiled step (kernels.client_rkmk4_step) works on the state's arrays (RelativeState.of_arrays).
        self._mass = body.mass_kg
        self._inertia9 = np.ascontiguousarray(body.inertia_com_kgm2, dtype=float).reshape(9).copy()
        self._inertia_inv9 = np.linalg.inv(body.inertia_com_kgm2).reshape(9).copy()
        # Load the compiled step now (cached on disk; ./dev compiles it), not in a node's first tick.
        g = kernels.pose_array(pin.SE3.Identity())
        kernels.client_rkmk4_step(g.copy(), twist0.copy(), g.copy(), np.zeros(6), np.zeros(6), self._mass, self._inertia9,
                                  self._inertia_inv9, body.mass_matrix, body.mass_matrix_inv, 1e-3)
        # and the nominal's steps while a node holds or drops steps (unforced_nominal's call: no step here)
        kernels.unforced_nominal_over(g.copy(), twist0.copy(), np.empty(12), np.empty(6), np.empty(6), self._mass,
                                      self._inertia9, self._inertia_inv9, body.mass_matrix, body.mass_matrix_inv, 1e-3,
                                      0.0)
        self.state.load_kernels()           # and what the nodes and a re-basing call on the state

    def restart(self, twist_client_body_0, pose_client_in_orbit_0: pin.SE3 | None = None,
                t0: float = 0.0) -> np.ndarray:
        """Start again from ``g_t(0) = g_n(0)``, ``V_t(0) = V_n(0)`` at ``t0``, as constructed (the client's
        own nominal, at rest relative to it); returns ``V_t(0)``."""
        twist0 = np.asarray(twist_client_body_0, dtype=float).reshape(6)
        if not all_finite(twist0):
            raise ConfigError(f'twist_client_body_0 must be finite, got {twist0.tolist()}')
        self._nominal = None       # a re-based nominal (hil_dynamics.rebase); None: the client's own (Eq. 4)
        g0 = pin.SE3.Identity() if pose_client_in_orbit_0 is None else pin.SE3(pose_client_in_orbit_0)
        self.state = ClientState(float(t0), g0, twist0.copy(), pin.SE3.Identity(), np.zeros(6))
        self._v_n = pin.Motion(twist0)
        self._v_c = pin.Motion.Zero()
        return twist0

    # -- Eq. (4) and Eq. (11) -----------------------------------------------------------
    def accelerations(self, pose_client_in_nominal: pin.SE3, twist_nominal: pin.Motion, twist_rel: pin.Motion,
                      wrench_client_com: pin.Force) -> tuple[pin.Motion, pin.Motion]:
        """``(V_n_dot, V_c_dot)`` from Eq. (4) and Eq. (11) (Motion objects, body frames)."""
        minv, vxiv = self._minv, self._inertia.vxiv
        nominal = self._nominal
        vn_dot = pin.Motion(minv @ (-vxiv(twist_nominal)).vector if nominal is None       # Eq. (4)
                            else nominal.mass_matrix_inv @ (-nominal.inertia.vxiv(twist_nominal)).vector)
        delta = pose_client_in_nominal.actInv(twist_nominal)                            # Eq. (6)
        # Eq. (11): M V_c_dot = F_c - C(V_t) V_t - M Delta_dot, V_t = V_c + Delta (Eq. 23),
        # Delta_dot = Ad_{g_c^-1} V_n_dot - [V_c, Delta].
        vc_dot = (pin.Motion(minv @ (wrench_client_com - vxiv(twist_rel + delta)).vector)
                  - pose_client_in_nominal.actInv(vn_dot) + twist_rel.cross(delta))
        return vn_dot, vc_dot

    def step(self, wrench_client_com: WrenchInput, dt: float) -> ClientState:
        """Advance by ``dt`` [s] under the measured wrench ``F_c`` (client body frame, about the CoM).

        ``wrench_client_com`` is either a 6-vector ``[f; tau]`` held over the step (a
        sampled sensor), or a callable ``(t, pose_client_in_orbit) -> [f; tau]`` evaluated
        at every integrator stage. A rejected input leaves the state untouched.

        The integrator is RKMK4 (:func:`hil_dynamics.lie_integrators.rkmk4`) written out
        for the two poses ``(g_n, g_c)``: this is the 1 kHz hot path, and unrolling saves a
        third of its cost. ``test_client_relative`` checks it against the generic
        ``rkmk4`` to rounding error.
        """
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        if not callable(wrench_client_com):
            return self._step_compiled(wrench_client_com, dt)
        return self.step_reference(wrench_client_com, dt)

    def rebase(self, pose_nominal_in_orbit: pin.SE3, twist_nominal_body, nominal=None) -> ClientState:
        """Switch to another nominal keeping ``g_t``, ``V_t`` (Eq. 23); ``nominal`` gives its Eq. (4)
        mass properties (:class:`hil_dynamics.rebase.NominalBody`; None keeps the current ones),
        which both the compiled and the reference step use. See :mod:`hil_dynamics.rebase`.
        """
        from hil_dynamics.rebase import rebase_relative

        s = self.state
        twist_nominal_body = np.asarray(twist_nominal_body, dtype=float).reshape(6).copy()
        g_c, v_c = rebase_relative(s.pose_nominal_in_orbit, s.twist_nominal_body, s.pose_client_in_nominal,
                                   s.twist_client_rel_body, pose_nominal_in_orbit, twist_nominal_body)
        if nominal is not None:
            self._nominal = nominal
        self.state = ClientState(s.t, pin.SE3(pose_nominal_in_orbit), twist_nominal_body, g_c, v_c)
        return self.state

    def rebase_nominal_twist(self, twist_nominal_body, nominal=None, twist_rel_body=None) -> ClientState:
        """:meth:`rebase` onto a nominal of the same pose (``g_n' = g_n``, so ``g_c`` stays) with the twist
        ``V_n'``: the increment of a re-basing ramp (:class:`hil_dynamics.rebase.PlannedRebase`), on arrays
        (:meth:`RelativeState.with_nominal_twist`, which refuses a bad twist before anything changes; with
        ``twist_rel_body``, ``V_c'`` computed with it and checked by the ramp's kernel,
        :meth:`RelativeState.with_twists`)."""
        state = (self.state.with_nominal_twist(twist_nominal_body) if twist_rel_body is None
                 else self.state.with_twists(twist_nominal_body, twist_rel_body))
        if nominal is not None:
            self._nominal = nominal
        self.state = state
        return state

    def advance_nominal(self, duration_s: float, dt_s: float) -> ClientState:
        """Move the mission's clock on by ``duration_s`` before it starts: the nominal follows its
        unforced motion (Eq. 4, :func:`unforced_nominal`), the relative state stays (the client held
        on its start pose relative to the nominal, as the mock-up waits on its table). So nodes that
        start at different instants share one nominal, that of a common mission epoch; a node that
        holds, or drops steps it cannot run, lets its nominal move on the same way, so that it stays
        the servicer's. After a re-basing the nominal moves as the re-based nominal body."""
        s = self.state
        if self._nominal is not None:        # a re-based nominal: its own unforced motion (hil_dynamics.rebase)
            from hil_dynamics.rebase import free_motion

            g_n, v_n = free_motion(self._nominal, s.pose_nominal_in_orbit, s.twist_nominal_body, duration_s, dt_s)
        else:
            g_n, v_n = unforced_nominal(self.body, s.pose_nominal_in_orbit, s.twist_nominal_body, duration_s, dt_s)
        self.state = ClientState(s.t + float(duration_s), g_n, v_n, s.pose_client_in_nominal, s.twist_client_rel_body)
        return self.state

    def _step_compiled(self, wrench_client_com, dt: float) -> ClientState:
        """:meth:`step_reference` with a held wrench, as one compiled kernel (same stages); the new
        state keeps the kernel's arrays (:meth:`RelativeState.of_arrays`)."""
        if type(wrench_client_com) is np.ndarray and wrench_client_com.shape == (6,) \
                and wrench_client_com.dtype == np.float64 and wrench_client_com.flags.c_contiguous:
            held = wrench_client_com            # the kernel only reads it
        else:
            held = np.asarray(wrench_client_com, dtype=float).reshape(6)
        if not all_finite(held):
            raise InputError(f'wrench must be finite, got {held.tolist()}')
        arrays, constants = self.step_arrays()
        kernels.client_rkmk4_step(*arrays, held, *constants, dt)
        return self.finish_step(dt, arrays)

    def step_arrays(self) -> tuple[tuple[np.ndarray, ...], tuple]:
        """What a compiled step takes: ``(g_n, V_n, g_c, V_c)``, fresh copies of the state's arrays for the
        kernel to step in place, and the constants ``(m, I_com, I_com^-1, M_n, M_n^-1)`` (the inertias as
        9-arrays; ``M_n`` the nominal's Eq. 4 spatial inertia, a re-based nominal's if any)."""
        s = self.state
        g_n0, g_c0 = s.pose_arrays()
        arrays = (g_n0.copy(), np.array(s.twist_nominal_body, dtype=float), g_c0.copy(),
                  np.array(s.twist_client_rel_body, dtype=float))
        nominal = self.__dict__.get('_nominal') or self.body       # a re-based nominal's Eq. (4) inertia
        return arrays, (self._mass, self._inertia9, self._inertia_inv9, nominal.mass_matrix, nominal.mass_matrix_inv)

    def finish_step(self, dt: float, arrays) -> ClientState:
        """The new state, ``dt`` after the current one, from the arrays a compiled step wrote (kept, not copied)."""
        return self.adopt(self.state.t + dt, arrays)

    def adopt(self, t: float, arrays) -> ClientState:
        """The state at ``t`` from the arrays ``(g_n, V_n, g_c, V_c)`` compiled steps wrote (kept, not copied): a
        compiled loop's state handed back (:class:`hil_teleop.slave_side.OrbitSide`)."""
        self.state = ClientState.of_arrays(t, *arrays)
        return self.state

    def step_reference(self, wrench_client_com: WrenchInput, dt: float) -> ClientState:
        """The readable RKMK4 step on ``pin.SE3``/``pin.Motion`` (see :meth:`step`).

        :meth:`step` runs it for a callable wrench and runs the compiled kernel
        (:func:`hil_dynamics.kernels.client_rkmk4_step`, same stages) for a held one;
        ``test_fast_paths`` checks that both agree to 1e-12.
        """
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        if callable(wrench_client_com):
            source = wrench_client_com

            def wrench_at(t, g_n, g_c):
                return pin.Force(np.asarray(source(t, g_n * g_c), dtype=float).reshape(6))
            held = None
        else:
            held = np.asarray(wrench_client_com, dtype=float).reshape(6)
            if not np.all(np.isfinite(held)):
                raise InputError(f'wrench must be finite, got {held.tolist()}')
            held = pin.Force(held)
        exp6, accel, dexp = pin.exp6, self.accelerations, dexp_inv
        s = self.state
        t, h, h2 = s.t, dt, 0.5 * dt
        g_n, g_c = s.pose_nominal_in_orbit, s.pose_client_in_nominal
        v_n, v_c = pin.Motion(s.twist_nominal_body), pin.Motion(s.twist_client_rel_body)
        # stage 1
        f = held if held is not None else wrench_at(t, g_n, g_c)
        a1n, a1c = accel(g_c, v_n, v_c, f)
        u1n, u1c = v_n * h2, v_c * h2
        # stage 2
        v2n, v2c = v_n + a1n * h2, v_c + a1c * h2
        g2c = g_c * exp6(u1c)
        f = held if held is not None else wrench_at(t + h2, g_n * exp6(u1n), g2c)
        a2n, a2c = accel(g2c, v2n, v2c, f)
        k2n, k2c = dexp(u1n, v2n), dexp(u1c, v2c)
        u2n, u2c = k2n * h2, k2c * h2
        # stage 3
        v3n, v3c = v_n + a2n * h2, v_c + a2c * h2
        g3c = g_c * exp6(u2c)
        f = held if held is not None else wrench_at(t + h2, g_n * exp6(u2n), g3c)
        a3n, a3c = accel(g3c, v3n, v3c, f)
        k3n, k3c = dexp(u2n, v3n), dexp(u2c, v3c)
        u3n, u3c = k3n * h, k3c * h
        # stage 4
        v4n, v4c = v_n + a3n * h, v_c + a3c * h
        g4c = g_c * exp6(u3c)
        f = held if held is not None else wrench_at(t + h, g_n * exp6(u3n), g4c)
        a4n, a4c = accel(g4c, v4n, v4c, f)
        k4n, k4c = dexp(u3n, v4n), dexp(u3c, v4c)
        h6 = h / 6.0
        g_n = g_n * exp6((v_n + (k2n + k3n) * 2.0 + k4n) * h6)
        g_c = g_c * exp6((v_c + (k2c + k3c) * 2.0 + k4c) * h6)
        self._v_n = v_n = v_n + (a1n + (a2n + a3n) * 2.0 + a4n) * h6
        self._v_c = v_c = v_c + (a1c + (a2c + a3c) * 2.0 + a4c) * h6
        self.state = ClientState(t + h, g_n, v_n.vector, g_c, v_c.vector)
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

    # The pose is kept as the compiled step's 12-array; its pin.SE3 is built when read.
    @property
    def pose_in_orbit(self) -> pin.SE3:
        """``g`` in orbit."""
        if self._pose_se3 is None:
            self._pose_se3 = kernels.array_pose(self._pose)
        return self._pose_se3

    @pose_in_orbit.setter
    def pose_in_orbit(self, pose: pin.SE3) -> None:
        self._pose = kernels.pose_array(pin.SE3(pose))
        self._pose_se3 = None

    @property
    def pose_in_orbit_array(self) -> np.ndarray:
        """``g`` as a 12-array (read only)."""
        return self._pose

    def step(self, wrench_com: WrenchInput, dt: float) -> None:
        """Advance by ``dt`` [s]; a held wrench runs the compiled kernel
        (:func:`hil_dynamics.kernels.rigid_rkmk4_step`), a callable one :meth:`step_reference`."""
        if callable(wrench_com):
            self.step_reference(wrench_com, dt)
            return
        wrench = wrench_com if type(wrench_com) is np.ndarray and wrench_com.shape == (6,) and \
            wrench_com.dtype == np.float64 else np.asarray(wrench_com, dtype=float).reshape(6)
        g, v = self._pose.copy(), self.twist_body.copy()
        kernels.rigid_rkmk4_step(g, v, wrench, self.body.mass_matrix, self.body.mass_matrix_inv, dt)
        self.t += dt
        self._pose, self._pose_se3, self.twist_body = g, None, v

    def step_reference(self, wrench_com: WrenchInput, dt: float) -> None:
        """The readable step: :func:`rkmk4` on ``pin.SE3``/``pin.Motion``."""
        minv, inertia = self.body.mass_matrix_inv, self.body.inertia

        def f(t, poses, vecs):
            w = wrench_com(t, poses[0]) if callable(wrench_com) else wrench_com
            return vecs, (pin.Motion(minv @ (pin.Force(np.asarray(w, dtype=float)) - inertia.vxiv(vecs[0])).vector),)

        (g,), (v,) = rkmk4(self.t, dt, (self.pose_in_orbit,), (pin.Motion(self.twist_body),), f)
        self.t += dt
        self.pose_in_orbit, self.twist_body = g, v.vector
