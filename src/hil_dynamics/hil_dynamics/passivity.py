"""Time-domain passivity observer and controller for one HIL admittance (seed 004 §IV-B, §VI).

Seed 004 Eq. (28) states that the HIL facility is passive as long as the power at the
contact port, ``(V_a - V_c)^T F_e``, stays within what the OBSW dissipates. Two things on a
real facility break this (seed 004 §VI and its ref. [18], De Stefano, Balachandran & Secchi,
IEEE T-RO 36(1) 2020): the robot does not move as commanded (delay and tracking lag:
Assumption 1 fails) and the admittance is integrated in discrete time. Both generate energy
that the simulated spacecraft does not have. This module observes that energy and removes
it, the time-domain passivity approach of Hannaford & Ryu (IEEE T-RO 18(1) 2002) applied to
an admittance-type (force in, motion out) port as in [18].

One port, ``n`` coordinates (6 for a spacecraft twist, 1 for a test rig). Per sample ``k``,
with the measured wrench ``F_k`` (the environment on the mock-up) held over the step:

* port energy (delay and tracking): the model moves with the commanded twist ``V``, the
  mock-up with the measured twist ``Ṽ``; over the step from sample ``k-1`` to ``k`` the model
  receives ``F_k-1^T (V_k-1 + V_k)/2 dt`` (the wrench is held), while the environment gives
  only ``(F_k-1 + F_k)^T/2 (Ṽ_k-1 + Ṽ_k)/2 dt``; the difference is what the loop creates (for
  constant twists simply ``F^T (V - Ṽ) dt``; the trapezoid also sees the half sample of
  delay the held wrench adds, e.g. ``k dx^2 / 2`` per step on a sampled spring). A step is
  accounted when its end sample arrives;
* integration energy: what the discrete integrator adds on top of the work of the wrench it
  was given (:func:`integration_energy`, passed in by the caller, 0 if not known);
* dissipated energy: the controller's damping wrench ``F_pc = -beta M V`` (``M`` the model's
  inertia, ``beta`` a rate in 1/s, so linear and angular axes are weighted consistently),
  held over the step, removes ``beta (M V_k-1)^T (V_k-1 + V_k)/2 dt`` from the model.

``E_obs = sum(port + integration - dissipated)`` is the energy the loop generated so far (> 0:
active). The controller applies, for the coming step, the smallest ``beta`` that dissipates the
whole excess at the current twist (Ryu, Kwon & Hannaford, IEEE T-RO 20(2)
2004), capped at ``max_rate_per_s`` (keep ``max_rate_per_s * dt < 1`` so the damping itself
stays stable in discrete time). When nothing is observed it does nothing: ``beta = 0`` and the
simulated dynamics are untouched.

Plain Python, no rclpy. Twists, wrenches and ``M`` must use one frame and one point (the
port's): for the client of seed 004 Eq. (11), the relative twist ``V_c`` commanded to the
table, its measured value, and the wrench ``F_c`` at the CoM; for the servicer of Eq. (18),
``V_s`` and the generalised base wrench ``J_b^T F_e``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError, InputError
from hil_dynamics import kernels

__all__ = ['PassivityController', 'PassivityOutput', 'integration_energy']


@dataclass
class PassivityOutput:
    """Result of one :meth:`PassivityController.update` (energies cumulative since the start) [J]."""

    energy_observed_j: float       # E_obs: port + integration - dissipated (> 0: the loop is active)
    energy_port_j: float           # sum F^T (V - Ṽ) dt: delay and tracking
    energy_integration_j: float    # sum of the integrator's energy
    energy_dissipated_j: float     # sum beta V^T M V dt removed by the controller
    rate_per_s: float              # beta for the coming step [1/s]
    wrench_pc: np.ndarray          # -beta M V: add to the model's input wrench for the coming step

    def as_list(self) -> list[float]:
        """``[E_obs, E_port, E_integration, E_dissipated, beta]`` (the ``*/passivity`` topic layout)."""
        return [self.energy_observed_j, self.energy_port_j, self.energy_integration_j, self.energy_dissipated_j,
                self.rate_per_s]


def integration_energy(mass_matrix, twist_before, twist_after, wrench_applied, dt: float, displacement=None) -> float:
    """Energy a discrete integrator created in one step of ``M V_dot + C(V) V = F`` [J].

    ``1/2 V^T M V`` is the rigid body's storage (seed 004 Eq. 25 with ``V = V_t``; the Coriolis
    term does no work, the passivity property of Eq. 2). The environment does the work
    ``F^T d`` on the body, ``d`` the displacement the integrator commanded in the step (a
    twist times time, e.g. ``log6(g_k^-1 g_k+1)``; default ``(V_before + V_after)/2 dt``,
    exact for a velocity that changes linearly in the step). The returned value is
    ``Delta W - F^T d``: positive when the integrator moved the body so that it gained more
    energy than the wrench gave (explicit Euler does, ref. [18] of seed 004).
    ``wrench_applied`` is everything the model was given in the step (measured wrench plus
    the controller's ``F_pc``).
    """
    m = np.atleast_2d(np.asarray(mass_matrix, dtype=float))
    v0 = np.atleast_1d(np.asarray(twist_before, dtype=float))
    v1 = np.atleast_1d(np.asarray(twist_after, dtype=float))
    f = np.atleast_1d(np.asarray(wrench_applied, dtype=float))
    d = 0.5 * (v0 + v1) * float(dt) if displacement is None else np.atleast_1d(np.asarray(displacement, dtype=float))
    stored = 0.5 * float(v1 @ m @ v1 - v0 @ m @ v0)
    return stored - float(f @ d)


class PassivityController:
    """Passivity observer (always) and controller (``enabled``) of one admittance port.

    Parameters
    ----------
    mass_matrix:
        The model's inertia at the port (n x n, or n diagonal values): weights the damping
        ``F_pc = -beta M V``.
    max_rate_per_s:
        Largest damping rate ``beta`` [1/s]; ``max_rate_per_s * dt < 1`` keeps it stable.
    enabled:
        False: observe only (``beta`` stays 0).
    threshold_j:
        Observed energy tolerated before the controller acts [J] (e.g. the energy the sensor
        noise alone produces); 0 dissipates every observed excess.
    """

    def __init__(self, mass_matrix, max_rate_per_s: float, enabled: bool = True, threshold_j: float = 0.0):
        m = np.asarray(mass_matrix, dtype=float)
        m = np.diag(m) if m.ndim == 1 else np.atleast_2d(m)
        if m.shape[0] != m.shape[1] or not np.all(np.isfinite(m)):
            raise ConfigError(f'mass_matrix must be a finite square matrix or a vector of diagonal values, got {m.tolist()}')
        if not np.allclose(m, m.T) or np.linalg.eigvalsh(0.5 * (m + m.T))[0] <= 0.0:
            raise ConfigError('mass_matrix must be symmetric positive definite')
        max_rate_per_s, threshold_j = float(max_rate_per_s), float(threshold_j)
        if not np.isfinite(max_rate_per_s) or max_rate_per_s < 0.0:
            raise ConfigError(f'max_rate_per_s must be finite and >= 0, got {max_rate_per_s!r}')
        if not np.isfinite(threshold_j) or threshold_j < 0.0:
            raise ConfigError(f'threshold_j must be finite and >= 0, got {threshold_j!r}')
        self.mass_matrix = np.ascontiguousarray(m)   # one layout for the compiled step (a slice would be another)
        self.n = m.shape[0]
        self.max_rate_per_s = max_rate_per_s
        self.enabled = bool(enabled)
        self.threshold_j = threshold_j
        self.wrench_pc = np.zeros(self.n)
        # The state, in arrays the compiled step (kernels.passivity_update) and the reference share:
        # [E_port, E_integration, E_dissipated, beta, max E_obs, has a previous sample, its dt, its beta]
        # and the previous sample's wrench, commanded twist, measured twist and M V_cmd.
        self._acc = np.zeros(8)
        self._prev = np.zeros((4, self.n))
        # Load the compiled step now (cached on disk; ./dev compiles it), not in a node's first tick: on copies
        z = np.zeros(self.n)
        kernels.passivity_update(self._acc.copy(), self._prev.copy(), self.mass_matrix, z, z, z, 1e-3, 0.0,
                                 self.enabled, self.max_rate_per_s, self.threshold_j, np.empty(self.n))

    energy_port_j = property(lambda self: float(self._acc[0]), doc='sum F^T (V - Ṽ) dt so far [J]')
    energy_integration_j = property(lambda self: float(self._acc[1]), doc="the integrator's energy so far [J]")
    energy_dissipated_j = property(lambda self: float(self._acc[2]), doc='dissipated by the controller so far [J]')
    rate_per_s = property(lambda self: float(self._acc[3]), doc='beta of the current step [1/s]')
    max_observed_j = property(lambda self: float(self._acc[4]), doc='largest E_obs seen [J]')

    @property
    def energy_observed_j(self) -> float:
        return self.energy_port_j + self.energy_integration_j - self.energy_dissipated_j

    def _vec(self, value, name: str) -> np.ndarray:
        if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (self.n,):
            arr = value.copy()           # the common case, per step at the control rate: a copy only
        else:
            arr = np.atleast_1d(np.asarray(value, dtype=float)).reshape(-1)
        if arr.shape[0] != self.n or not np.isfinite(arr).all():
            raise ConfigError(f'{name} must be {self.n} finite numbers, got {arr.tolist()}')
        return arr

    def _fast(self, value, name: str) -> np.ndarray:
        """``value`` itself when it is already what the compiled step takes (C-contiguous float64 ``(n,)``;
        the kernel copies what it keeps), else the checked copy of :meth:`_vec`."""
        if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (self.n,) \
                and value.flags.c_contiguous:
            return value
        return self._vec(value, name)

    def update(self, twist_measured, twist_commanded, wrench, dt: float,
               integration_energy_j: float = 0.0) -> PassivityOutput:
        """:meth:`update_reference` in one compiled call (:func:`hil_dynamics.kernels.passivity_update`;
        tested against it in ``test_passivity.py``). Same arguments, result and errors."""
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        v_meas = self._fast(twist_measured, 'twist_measured')
        v_cmd = self._fast(twist_commanded, 'twist_commanded')
        f = self._fast(wrench, 'wrench')
        wrench_pc = np.empty(self.n)
        excess, pending = kernels.passivity_update(self._acc, self._prev, self.mass_matrix, v_meas, v_cmd, f,
                                                   float(dt), float(integration_energy_j), self.enabled,
                                                   self.max_rate_per_s, self.threshold_j, wrench_pc)
        if pending < 0.0:                     # a non-finite input: nothing was changed; name it
            for value, name in ((twist_measured, 'twist_measured'), (twist_commanded, 'twist_commanded'),
                                (wrench, 'wrench')):
                self._vec(value, name)
            raise InputError(f'integration_energy_j must be finite, got {integration_energy_j!r}')
        return self.output(excess, pending, wrench_pc)

    def output(self, excess: float, pending: float, wrench_pc: np.ndarray) -> PassivityOutput:
        """The :class:`PassivityOutput` of the update that just ran in a compiled call (:meth:`update`, or one that
        observes the port and steps the model together, ``ServicerHilLockstep.step_with_port``): ``excess`` and
        ``pending`` as :func:`hil_dynamics.kernels.passivity_update` returned them, ``wrench_pc`` the array it wrote
        (kept as :attr:`wrench_pc`)."""
        self.wrench_pc = wrench_pc
        acc = self._acc
        return PassivityOutput(excess, float(acc[0]), float(acc[1]), float(acc[2]) + pending, float(acc[3]),
                               wrench_pc.copy())

    def update_reference(self, twist_measured, twist_commanded, wrench, dt: float,
                         integration_energy_j: float = 0.0) -> PassivityOutput:
        """Account the coming sample of length ``dt`` [s] and return the damping for it.

        Call it once per step, before the model's step: ``twist_commanded`` is the model's
        (commanded) twist now, ``twist_measured`` the robot's measured one at the port,
        ``wrench`` the measured wrench held over the step (without ``F_pc``), and
        ``integration_energy_j`` what the integrator created in the previous step. The
        returned ``wrench_pc = -beta M V`` must be added to the model's input for this step;
        its dissipation is accounted here. Malformed input raises ValueError naming it and
        leaves the state untouched.
        """
        if not dt > 0.0:
            raise ConfigError(f'dt must be > 0, got {dt!r}')
        v_meas = self._vec(twist_measured, 'twist_measured')
        v_cmd = self._vec(twist_commanded, 'twist_commanded')
        f = self._vec(wrench, 'wrench')
        if not np.isfinite(integration_energy_j):
            raise InputError(f'integration_energy_j must be finite, got {integration_energy_j!r}')
        # The step that ended now (from the previous sample to this one), with both its ends known:
        # the model moved by the mean commanded twist under the held wrench; the environment
        # gave the trapezoid of the wrench over the mean measured twist (the zero-order hold of
        # the wrench is itself half a sample of delay, which the model does not see).
        acc = self._acc
        if acc[5] > 0.0:
            f_prev, v_cmd_prev, v_meas_prev, m_v_prev = self._prev
            dt_prev, beta_prev = acc[6], acc[7]
            v_mean = 0.5 * (v_cmd_prev + v_cmd)
            model = float(f_prev @ v_mean)
            environment = 0.25 * float((f_prev + f) @ (v_meas_prev + v_meas))
            acc[0] += (model - environment) * dt_prev
            # The damping wrench -beta M V_k-1 was held over that step: its work on the model.
            acc[2] += beta_prev * float(m_v_prev @ v_mean) * dt_prev
        acc[1] += float(integration_energy_j)
        m_v = self.mass_matrix @ v_cmd
        kinetic2 = float(v_cmd @ m_v)                 # V^T M V
        excess = self.energy_observed_j
        acc[4] = max(acc[4], excess)
        beta = 0.0
        if self.enabled and excess > self.threshold_j:
            beta = min(self.max_rate_per_s, excess / (kinetic2 * dt)) if kinetic2 > 0.0 else self.max_rate_per_s
        # What the damping will remove over the coming step at this twist (accounted exactly,
        # with the step's mean twist, at the next call).
        pending = beta * kinetic2 * dt
        self._prev[:] = (f, v_cmd, v_meas, m_v)
        acc[3], acc[5], acc[6], acc[7] = beta, 1.0, dt, beta
        self.wrench_pc = -beta * m_v
        excess -= pending
        return PassivityOutput(excess, self.energy_port_j, self.energy_integration_j, self.energy_dissipated_j + pending,
                               beta, self.wrench_pc.copy())


class ClientPort:
    """One client admittance step (seed 004 Eq. 11) with the passivity observer/controller of its
    port around it (Eq. 28, §VI): what ``client_admittance_node``, the fused hot path and the
    lockstep runners all run.

    ``admittance`` is a :class:`hil_dynamics.client.ClientAdmittance`. :meth:`step` observes the
    port over the coming step (the commanded relative twist ``V_c`` against the table's measured
    one, the wrench at the CoM held over the step, and the integrator's energy of the previous
    step), adds the controller's damping ``-beta M_t V_c`` to the wrench, integrates one step and
    returns the new state; :attr:`out` is the observer's latest :class:`PassivityOutput` (the
    ``client/passivity`` topic).
    """

    def __init__(self, admittance, max_rate_per_s: float, enabled: bool = True, threshold_j: float = 0.0):
        self.admittance = admittance
        self.controller = PassivityController(admittance.body.mass_matrix, max_rate_per_s, enabled, threshold_j)
        self.integration_j = 0.0          # what the integrator created in the last step [J]
        self.out = PassivityOutput(0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(6))
        self._out_args = None             # the compiled step's (E_obs, pending, F_pc), until out is read
        self._after = (None, None, None)  # (state, g_t, V_t) after the last step: its Eq. 23 map, reused
        # Load the compiled step now (cached on disk; ./dev compiles it), not in a node's first tick: on copies,
        # nothing of the port or the admittance changes
        if hasattr(admittance, 'step_arrays') and self.controller.n == 6:
            c = self.controller
            arrays, constants = admittance.step_arrays()
            kernels.client_port_step(c._acc.copy(), c._prev.copy(), c.mass_matrix, np.zeros(6), np.zeros(6), 1e-3, 0.0,
                                     c.enabled, c.max_rate_per_s, c.threshold_j, np.empty(6), np.empty(6), *arrays,
                                     *constants)

    def step(self, wrench_com, dt: float, twist_measured=None):
        """One step of ``dt`` under ``wrench_com`` (the measured wrench at the client CoM, body axes);
        ``twist_measured``: the table's realised relative body twist (None: not measured, the
        commanded one stands in and only the integration and sampling are observed).

        :meth:`step_reference` in one compiled call (:func:`hil_dynamics.kernels.client_port_step`; tested
        against it in ``test_passivity.py``), for an admittance with a compiled step
        (:meth:`hil_dynamics.client.ClientAdmittance.step_arrays`). Same result, state and errors."""
        adm, c = self.admittance, self.controller
        step_arrays = getattr(adm, 'step_arrays', None)
        if step_arrays is None or c.n != 6 or not dt > 0.0:
            return self.step_reference(wrench_com, dt, twist_measured)
        f = c._fast(wrench_com, 'wrench')
        arrays, constants = step_arrays()
        v_meas = arrays[3] if twist_measured is None else c._fast(twist_measured, 'twist_measured')
        wrench_pc, applied = np.empty(6), np.empty(6)
        excess, pending, integration_j = kernels.client_port_step(
            c._acc, c._prev, c.mass_matrix, v_meas, f, float(dt), float(self.integration_j), c.enabled,
            c.max_rate_per_s, c.threshold_j, wrench_pc, applied, *arrays, *constants)
        if pending < 0.0:                 # a non-finite input: nothing changed; the reference names it
            return self.step_reference(wrench_com, dt, twist_measured)
        self.adopt(excess, pending, wrench_pc, integration_j)
        return adm.finish_step(dt, arrays)

    def adopt(self, excess: float, pending: float, wrench_pc: np.ndarray, integration_j: float) -> None:
        """The port after a compiled ``kernels.client_port_step`` (this class's :meth:`step`, or a compiled loop's
        steps: ``client_hot_path_loop``, ``runners.mission_kernel``): its newest ``E_obs``, pending dissipation and
        damping wrench (kept: :attr:`out` is built from them when read), the step's integration energy; the Eq. (23)
        maps of :meth:`step_reference` are dropped (the admittance's state is a new one)."""
        self.controller.wrench_pc = wrench_pc
        self._out, self._out_args = None, (excess, pending, wrench_pc)    # out is built when read
        self.integration_j = integration_j
        self._after = (None, None, None)

    @property
    def out(self) -> PassivityOutput:
        """The observer's latest :class:`PassivityOutput`. After a compiled :meth:`step` it is built when read (a
        lockstep runner records one step in fifty, a node publishes one in four) from what the step returned and
        the controller's sums, which only this port's next step changes."""
        out = self._out
        if out is None:
            excess, pending, wrench_pc = self._out_args
            acc = self.controller._acc
            out = self._out = PassivityOutput(excess, float(acc[0]), float(acc[1]), float(acc[2]) + pending,
                                              float(acc[3]), wrench_pc.copy())
        return out

    @out.setter
    def out(self, value: PassivityOutput) -> None:
        self._out = value

    def step_reference(self, wrench_com, dt: float, twist_measured=None):
        """:meth:`step` composed of its parts: :meth:`PassivityController.update`, the admittance's own
        ``step`` under the damped wrench, and the integration energy from the Eq. (23) maps of the states
        before and after (:func:`hil_dynamics.kernels.integration_energy_step`)."""
        s = self.admittance.state
        v_cmd = s.twist_client_rel_body
        out = self.controller.update(v_cmd if twist_measured is None else twist_measured, v_cmd, wrench_com, dt,
                                     self.integration_j)
        applied = np.asarray(wrench_com, dtype=float) + out.wrench_pc
        # the state before this step is the one the last step made (a new state object for anything
        # else that moved it: a rebase, advance_nominal), so its absolute pose and twist are known
        g0, v0 = self._after[1:] if self._after[0] is s else s.absolute_arrays()
        state = self.admittance.step(applied, dt)
        g1, v1 = state.absolute_arrays()
        self._after = (state, g1, v1)
        # integration_energy(M, v0, v1, applied, dt, log6(g0^-1 g1)) in one compiled call
        self.integration_j = kernels.integration_energy_step(self.controller.mass_matrix, v0, v1, applied, g0, g1)
        self.out = out
        return state
