"""Re-basing the nominal trajectory after the grasp (seed 004 Eqs. 4, 23, 29).

The nominal ``(g_n, V_n)`` is any bounded unforced motion (Eq. 4); the facility realises only
the motion relative to it (``g_c``, ``g_s``). Seed 004 takes the client's unforced motion. After
the grasp the servicer-client stack tumbles about its own centre of mass at its own rate, so
relative to the client's nominal the grasp point circles and the tables leave their
workspaces (Eq. 29 bounds the velocities only while ``g_c``, ``g_s`` stay bounded).

Switching the nominal changes only the split of Eq. (23), never the absolute states::

    g_t = g_n g_c = g_n' g_c'        V_t = V_c + Ad_{g_c^-1} V_n = V_c' + Ad_{g_c'^-1} V_n'

(:func:`rebase_relative`; the same for the servicer base ``g_b``, ``V_b``). A table must never
jump, so the nominal frame keeps its pose at the switch (``g_n' = g_n``, hence ``g_c' = g_c``,
``g_s' = g_s``) and only its velocity changes, in small increments over a ramp
(:class:`PlannedRebase`): each increment is an exact re-basing, so the absolute states are
untouched and the table twists ``V_c``, ``V_s`` change smoothly (a min-jerk blend). The target
is the stack's rigid motion: the nominal frame carries the compound's locked inertia (client
plus servicer, :func:`compound_inertia_and_momentum`) and, at the end of the ramp, exactly the
compound's momentum, so from then on the nominal is the compound's unforced motion (Eq. 4
with the compound's inertia) and the tables only see the stack's internal motion. The target is
fixed once, at the ramp's start (:class:`RebasePlan`), and moves as a free body: each admittance
applies the same plan to its own nominal, so two processes (the live graph's client and servicer
nodes) keep one ``g_n`` without exchanging their states at every step.

Plain Python, no rclpy. Twists linear first, wrenches/momenta ``[f; tau]`` (:mod:`hil_dynamics.se3`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError, InputError
from hil_dynamics import kernels
from hil_dynamics.profiles import min_jerk

__all__ = ['NominalBody', 'PlannedRebase', 'RebaseParams', 'RebasePlan', 'client_part', 'compound_inertia_and_momentum',
           'free_motion', 'inertia_from_matrix', 'plan_rebase', 'rebase_relative', 'servicer_part']

_ZERO_WRENCH = np.zeros(6)     # the compound's free motion: never written (not flagged read-only: see runners.mission)


def inertia_from_matrix(mass_matrix_6) -> pin.Inertia:
    """A ``pin.Inertia`` from a 6x6 spatial inertia (linear first), e.g. the locked ``M_b`` of Eq. (12)."""
    m6 = np.asarray(mass_matrix_6, dtype=float)
    mass = float(m6[0, 0])
    cx = -m6[:3, 3:] / mass                              # M[:3, 3:] = -m [c]x
    c = np.array([cx[2, 1], cx[0, 2], cx[1, 0]])
    cx = pin.skew(c)
    rot_com = m6[3:, 3:] + mass * cx @ cx                # I_origin = I_com - m [c]x^2
    return pin.Inertia(mass, c, 0.5 * (rot_com + rot_com.T))


class NominalBody:
    """Mass properties of a nominal (Eq. 4) whose frame need not be at its centre of mass.

    Same interface as :class:`hil_dynamics.rigid_body.RigidBody` where the admittances use it
    (``inertia``, ``mass_matrix``, ``mass_matrix_inv``, ``acceleration``): the body-frame
    equation ``M V_dot + V x* (M V) = F`` holds in any body-fixed frame.
    """

    def __init__(self, inertia: pin.Inertia):
        self._inertia = pin.Inertia(inertia)
        self._at_com = None      # the body about its CoM (free_motion's), built when first needed
        self.mass_kg = float(self._inertia.mass)
        self.mass_matrix = self._inertia.matrix()
        self.mass_matrix_inv = np.linalg.inv(self.mass_matrix)

    @classmethod
    def of_matrices(cls, mass_matrix: np.ndarray, mass_matrix_inv: np.ndarray) -> 'NominalBody':
        """The body from its 6x6 spatial inertia and its inverse (kept, not copied; the ramp's kernel
        :func:`hil_dynamics.kernels.compound_in_nominal` gives both); ``inertia`` is built when read."""
        body = cls.__new__(cls)
        body._inertia = body._at_com = None
        body.mass_kg = float(mass_matrix[0, 0])
        body.mass_matrix, body.mass_matrix_inv = mass_matrix, mass_matrix_inv
        return body

    @property
    def inertia(self) -> pin.Inertia:
        if self._inertia is None:
            self._inertia = inertia_from_matrix(self.mass_matrix)
        return self._inertia

    def acceleration(self, twist_body, wrench) -> np.ndarray:
        twist = pin.Motion(np.asarray(twist_body, dtype=float))
        return self.mass_matrix_inv @ (np.asarray(wrench, dtype=float) - self.inertia.vxiv(twist).vector)


def rebase_relative(pose_nominal_in_orbit: pin.SE3, twist_nominal_body, pose_rel_in_nominal: pin.SE3, twist_rel_body,
                    pose_nominal_in_orbit_new: pin.SE3, twist_nominal_body_new) -> tuple[pin.SE3, np.ndarray]:
    """The relative state for a new nominal that keeps the absolute one (Eq. 23).

    ``g' = g_n'^-1 g_n g_rel``, ``V' = V - Ad_{g'^-1} V_n'`` with ``V = V_rel + Ad_{g_rel^-1} V_n``.
    Serves the client (``g_c``, ``V_c``) and the servicer base (``g_s``, ``V_s``).
    """
    absolute = pose_nominal_in_orbit * pose_rel_in_nominal
    twist = np.asarray(twist_rel_body, dtype=float) + pose_rel_in_nominal.actInv(
        pin.Motion(np.asarray(twist_nominal_body, dtype=float))).vector
    rel = pose_nominal_in_orbit_new.actInv(absolute)
    return rel, twist - rel.actInv(pin.Motion(np.asarray(twist_nominal_body_new, dtype=float))).vector


def compound_inertia_and_momentum(parts) -> tuple[pin.Inertia, np.ndarray]:
    """Locked inertia and spatial momentum of bodies, in one frame about its origin.

    ``parts``: ``(pose_part_in_frame, inertia of the part in its own frame (pin.Inertia),
    momentum of the part in its own frame [p; L])`` triples. For the stack in the nominal
    frame: the client ``(g_c, M_t, M_t V_t)`` and the servicer ``(g_s, M_b, M[:6] [V_b; dq])``
    (the whole servicer's momentum at the base frame, Eq. 12).
    """
    inertia = pin.Inertia.Zero()
    momentum = np.zeros(6)
    for pose, part_inertia, part_momentum in parts:
        inertia = inertia + pose.act(part_inertia)
        momentum = momentum + pose.act(pin.Force(np.asarray(part_momentum, dtype=float))).vector
    return inertia, momentum


@dataclass
class RebaseParams:
    """When and how fast the nominal is re-based (scenario section ``rebase``)."""

    enabled: bool = True
    after_post_grasp_s: float = 5.0      # settle time after the OBSW enters post_grasp [s]
    ramp_s: float = 10.0                 # duration of the velocity blend [s]

    def __post_init__(self):
        for name in ('after_post_grasp_s', 'ramp_s'):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value < 0.0:
                raise ConfigError(f'{name} must be finite and >= 0, got {value!r}')


@dataclass
class RebaseStep:
    """What one increment did (for the tests and the record)."""

    t: float
    fraction: float                      # share of the remaining velocity difference applied
    twist_nominal_change: np.ndarray     # V_n' - V_n
    twist_nominal_body: np.ndarray = None     # V_n' (body, linear first)
    nominal_mass_matrix: np.ndarray = None    # 6x6 spatial inertia of the new nominal, nominal frame


@dataclass
class RebasePlan:
    """A re-basing every admittance applies alike, each to its own copy of the nominal.

    The stack's rigid motion, fixed once (:func:`plan_rebase`): a free body of the compound's
    locked mass properties (``mass_kg``, ``inertia_com_kgm2`` about its CoM in its frame's axes),
    whose CoM frame is at ``pose_com_in_nominal`` in the nominal frame of ``t_start`` and moves with
    ``twist_com_body`` then. From ``t_start`` to ``t_start + ramp_s`` each side moves its ``V_n``
    towards that body's velocity in the nominal frame (:class:`PlannedRebase`). Two processes that
    each run one admittance (the live graph) get the same plan and so keep one ``g_n`` (Eq. 23):
    the target depends on the plan and the shared nominal only, never on the other side's state.
    :meth:`to_list` / :meth:`from_list` are its message layout (``std_msgs/Float64MultiArray``).
    """

    t_start: float
    ramp_s: float
    mass_kg: float
    pose_com_in_nominal: pin.SE3
    inertia_com_kgm2: np.ndarray
    twist_com_body: np.ndarray
    LENGTH = 25     # t_start, ramp_s, mass, CoM pose (x y z qx qy qz qw), inertia (9), twist (6)

    def to_list(self) -> list[float]:
        return [float(self.t_start), float(self.ramp_s), float(self.mass_kg),
                *map(float, pin.SE3ToXYZQUAT(self.pose_com_in_nominal)),
                *map(float, np.asarray(self.inertia_com_kgm2).reshape(9)), *map(float, self.twist_com_body)]

    @classmethod
    def from_list(cls, values) -> 'RebasePlan':
        """The plan from its message; :class:`InputError` naming what is wrong."""
        v = np.asarray(values, dtype=float)
        if v.shape != (cls.LENGTH,) or not np.all(np.isfinite(v)):
            raise InputError(f'a re-basing plan is {cls.LENGTH} finite numbers, got {np.asarray(values).tolist()!r}')
        if abs(np.linalg.norm(v[6:10]) - 1.0) > 1e-6:
            raise InputError(f'a re-basing plan with a CoM orientation that is no unit quaternion: {v[6:10].tolist()}')
        plan = cls(v[0], v[1], v[2], pin.XYZQUATToSE3(v[3:10]), v[10:19].reshape(3, 3).copy(), v[19:25].copy())
        try:
            plan.body()
        except ConfigError as exc:
            raise InputError(f'a re-basing plan with bad mass properties: {exc}') from None
        if not v[1] >= 0.0:
            raise InputError(f'a re-basing plan with ramp_s {v[1]!r} < 0')
        return plan

    def body(self):
        """The compound as a free rigid body about its CoM (Eq. 4)."""
        from hil_dynamics.rigid_body import RigidBody

        return RigidBody(self.mass_kg, self.inertia_com_kgm2)


def plan_rebase(t_start: float, ramp_s: float, parts, lead=None) -> RebasePlan:
    """The plan onto the rigid motion of ``parts`` (:func:`compound_inertia_and_momentum`: poses,
    inertias and momenta in the nominal frame): the compound's locked inertia and its rigid twist
    ``M^-1 h``, moved to its CoM frame.

    ``lead = (duration_s, dt_s, nominal_body, pose_nominal_in_orbit, twist_nominal_body)``: the parts
    are of ``duration_s`` before ``t_start``; the compound (a free rigid body) and the nominal (its
    unforced motion, Eq. 4, as every side will integrate it meanwhile) are moved on to ``t_start``."""
    from hil_dynamics.client import unforced_nominal

    inertia, momentum = compound_inertia_and_momentum(parts)
    twist = np.linalg.solve(inertia.matrix(), momentum)
    at_com = pin.SE3(np.eye(3), np.array(inertia.lever))
    plan = RebasePlan(float(t_start), float(ramp_s), float(inertia.mass), at_com, np.array(inertia.inertia),
                      at_com.actInv(pin.Motion(twist)).vector)
    if lead is not None and lead[0] > 0.0:
        duration, dt, nominal_body, g_n, v_n = lead
        g_com, v_com = unforced_nominal(plan.body(), g_n * at_com, plan.twist_com_body, duration, dt)
        g_n1, _ = unforced_nominal(nominal_body, g_n, v_n, duration, dt)
        plan.pose_com_in_nominal, plan.twist_com_body = g_n1.actInv(g_com), v_com
    return plan


def servicer_part(servicer, q_arm, dq_arm):
    """The servicer's ``(g_s, M_b, momentum)`` in the nominal frame (Eq. 12): its locked inertia at the
    base and the whole servicer's momentum there."""
    s = servicer.state
    _, v_b = s.absolute()
    mass = servicer.model.mass_matrix(q_arm)
    return (s.pose_base_in_nominal, inertia_from_matrix(mass[:6, :6]),
            mass[:6] @ np.concatenate((v_b, np.asarray(dq_arm, dtype=float))))


def client_part(pose_client_in_nominal: pin.SE3, body, twist_client_body):
    """The client's ``(g_c, M_t, M_t V_t)`` in the nominal frame."""
    return pose_client_in_nominal, body.inertia, body.mass_matrix @ np.asarray(twist_client_body, dtype=float)


def free_motion(body: NominalBody, pose_nominal_in_orbit: pin.SE3, twist_nominal_body, duration_s: float,
                dt_s: float) -> tuple[pin.SE3, np.ndarray]:
    """The unforced motion (Eq. 4) of a nominal whose frame is off its CoM, integrated about the CoM
    (:func:`hil_dynamics.client.unforced_nominal`) and moved back to the nominal frame."""
    from hil_dynamics.client import unforced_nominal
    from hil_dynamics.rigid_body import RigidBody

    inertia = body.inertia
    at_com = pin.SE3(np.eye(3), np.array(inertia.lever))
    if body._at_com is None:          # kept: a held node calls this at every step (unforced_nominal's integrator)
        body._at_com = RigidBody(inertia.mass, inertia.inertia)
    g, v = unforced_nominal(body._at_com, pose_nominal_in_orbit * at_com,
                            at_com.actInv(pin.Motion(np.asarray(twist_nominal_body, dtype=float))).vector,
                            duration_s, dt_s)
    return g * at_com.inverse(), at_com.act(pin.Motion(v)).vector


class PlannedRebase:
    """One side's application of a :class:`RebasePlan`, one exact re-basing per step.

    Call :meth:`update` before each step with the step's time and the side's admittance
    (:class:`hil_dynamics.client.ClientAdmittance` or :class:`hil_dynamics.servicer.ServicerAdmittance`).
    The first call at or after ``t_start`` places the compound on the nominal of that step and
    from then on it moves freely (:func:`hil_dynamics.client.unforced_nominal`, the steps' own
    times); each call moves ``V_n`` by the min-jerk share of what remains towards the compound's
    velocity in the nominal frame and gives the nominal the compound's inertia there (Eq. 4 in a
    body frame off its CoM, :class:`NominalBody`); the call at ``t_start + ramp_s`` lands on it
    exactly. So the nominal's frame stays put (``g_n' = g_n``: no table pose jumps) and from then on
    moves rigidly with the compound's unforced motion. A first call later than one step after
    ``t_start`` still applies the plan, and :attr:`late_s` says by how much (another side that was on
    time then has another nominal).
    """

    def __init__(self, plan: RebasePlan, dt_s: float):
        from hil_dynamics.client import ClientAdmittance

        self.plan, self.dt_s = plan, float(dt_s)
        self._make = lambda g: ClientAdmittance(plan.body(), plan.twist_com_body, g)
        inertia = np.asarray(plan.inertia_com_kgm2, dtype=float).reshape(3, 3)
        self._inertia9 = np.ascontiguousarray(inertia).reshape(9).copy()
        self._inertia_inv9 = np.linalg.inv(inertia).reshape(9).copy()
        self._mass_kg = float(plan.mass_kg)
        self._t_start, self._ramp_s = float(plan.t_start), max(float(plan.ramp_s), 1e-12)
        self._free_arrays = self._free_constants = self._free_state = None
        # The bookkeeping, in the array the compiled increment steps (kernels.RS_*): update() and a compiled loop that
        # runs the increments (loop_args) share it.
        rs = self._rs = np.zeros(kernels.N_RS)
        rs[kernels.RS_T_START], rs[kernels.RS_RAMP_S], rs[kernels.RS_ACTIVE] = self._t_start, self._ramp_s, 1.0
        self.free = None            # the compound's free motion (client = nominal, relative identity)
        self.late_s = 0.0
        self.last: RebaseStep | None = None     # the newest step's record (only it: a 10 s ramp at 1 kHz kept 10k)

    t_prev = property(lambda self: float(self._rs[kernels.RS_T_PREV]) if self.free is not None else None,
                      lambda self, t: self._rs.__setitem__(kernels.RS_T_PREV, t),
                      doc='the newest increment\'s time (None before the first)')
    done = property(lambda self: bool(self._rs[kernels.RS_DONE]),
                    lambda self, value: self._rs.__setitem__(kernels.RS_DONE, 1.0 if value else 0.0),
                    doc='whether the ramp has landed on the compound')

    @property
    def active(self) -> bool:
        return not self.done

    def _free_at(self, t: float, state) -> None:
        """The compound's free motion moved on to ``t`` (placed on ``state``'s nominal at the first call)."""
        if self.free is None:
            self.late_s = max(0.0, t - self.plan.t_start)
            self.free = self._make(state.pose_nominal_in_orbit * self.plan.pose_com_in_nominal)
        else:
            duration = t - self.t_prev
            n = int(duration / self.dt_s + 1e-9)
            for _ in range(n):
                self.free.step(_ZERO_WRENCH, self.dt_s)
            if duration - n * self.dt_s > 1e-12:
                self.free.step(_ZERO_WRENCH, duration - n * self.dt_s)
        self.t_prev = t

    def update(self, t: float, rule) -> RebaseStep | None:
        """Apply the increment of the step at ``t`` to ``rule`` (None before the plan or after it).

        The first call places the compound's free motion on the rule's nominal (:meth:`_free_at`); every call then
        runs :func:`hil_dynamics.kernels.rebase_increment` (:meth:`loop_args`): the free motion moved on to ``t``,
        the compound seen from the nominal frame (:func:`hil_dynamics.kernels.compound_in_nominal`: its velocity
        there and its spatial inertia with the inverse), the min-jerk share and the new twists; the rule keeps its
        nominal's pose and takes the new twists and inertia (``rebase_nominal_twist``, an exact re-basing).
        :meth:`update_reference` is the same with ``pin.SE3``/``pin.Inertia``, the free motion stepped by its
        admittance and ``rule.rebase``."""
        if self.done or t < self.plan.t_start - 1e-9:
            return None
        s = rule.state
        if self.free is None:                  # placed on the nominal of this step
            self._free_at(t, s)
        g_n, g_rel = s.pose_arrays()
        v_n = np.array(s.twist_nominal_body, dtype=float)      # new arrays: the increment writes the new twists
        v_rel = np.array(s._twist_rel, dtype=float)
        m6, m6_inv, v_old, v_new = np.empty((6, 6)), np.empty((6, 6)), np.empty(6), np.empty(6)
        status = kernels.rebase_increment(float(t), self.dt_s, *self.loop_args(), v_old, v_new, g_n, v_n, g_rel, v_rel,
                                          m6, m6_inv)
        self.loop_leave()
        if status == 2:
            raise InputError(f're-basing at t={t}: the new nominal twist {v_new.tolist()} or the relative twist '
                             'with it is not finite')
        rule.rebase_nominal_twist(v_n, NominalBody.of_matrices(m6, m6_inv), v_rel)
        # the record shares the new twist and inertia with the rule (arrays of this call, never written again)
        return self.loop_record(v_old, v_n, m6)

    def loop_record(self, v_old: np.ndarray, v_new: np.ndarray, m6: np.ndarray) -> RebaseStep:
        """:attr:`last` after :func:`hil_dynamics.kernels.rebase_increment` applied an increment (its time and fraction
        in the bookkeeping): ``V_n`` before and after it and the new nominal's spatial inertia (kept, not copied)."""
        rs = self._rs
        self.last = RebaseStep(float(rs[kernels.RS_T_LAST]), float(rs[kernels.RS_FRACTION]), v_new - v_old, v_new, m6)
        return self.last

    def loop_args(self) -> tuple:
        """:func:`hil_dynamics.kernels.rebase_increment`'s arguments from ``rs`` to the plan's inertia: the
        bookkeeping, the compound's free motion (arrays stepped in place from now on; taken again if its state was
        replaced) with its constants, and the plan's mass and inertia. For :meth:`update`, and for a compiled loop
        that runs the increments (``hil_bringup.runners.mission_kernel``) after the first (:meth:`_free_at`), then
        calls :meth:`loop_leave`."""
        free = self.free
        if free.state is not self._free_state:
            self._free_arrays, self._free_constants = free.step_arrays()
            self._free_state = free.state
            self._rs[kernels.RS_T_FREE] = free.state.t
        return (self._rs, *self._free_arrays, *self._free_constants, self._mass_kg, self._inertia9, self._inertia_inv9)

    def loop_leave(self) -> None:
        """After increments on :meth:`loop_args`: the free motion's state is that of its arrays at their time."""
        free = self.free
        free.state = type(free.state).of_arrays(float(self._rs[kernels.RS_T_FREE]), *self._free_arrays)
        self._free_state = free.state

    def _fraction_now(self, t: float) -> tuple[float, float]:
        """``(s(t), fraction)``: the min-jerk progress ``s`` at ``t`` and the share of what remains that the step at
        ``t`` applies, ``(s(t) - s(t_last)) / (1 - s(t_last))`` (1 at the ramp's end), with ``s(t_last)`` kept from
        the last step."""
        rs = self._rs
        s_prev = float(rs[kernels.RS_S_LAST]) if rs[kernels.RS_HAS_LAST] else 0.0
        s_now = min_jerk((t - self._t_start) / self._ramp_s)
        return s_now, (1.0 if s_now >= 1.0 else (s_now - s_prev) / (1.0 - s_prev))

    def update_reference(self, t: float, rule) -> RebaseStep | None:
        """The readable :meth:`update`: the compound on ``pin.SE3``, its inertia by ``pin.Inertia.act`` and a 6x6
        inverse, the increment applied by ``rule.rebase`` (:func:`rebase_relative` with ``g_n' = g_n``)."""
        plan = self.plan
        if self.done or t < plan.t_start - 1e-9:
            return None
        s = rule.state
        g_n, v_n = s.pose_nominal_in_orbit, s.twist_nominal_body
        self._free_at(t, s)
        com = g_n.actInv(self.free.state.pose_nominal_in_orbit)
        s_now, fraction = self._fraction_now(t)
        v_target = com.act(pin.Motion(self.free.state.twist_nominal_body)).vector
        nominal = NominalBody(com.act(pin.Inertia(plan.mass_kg, np.zeros(3), plan.inertia_com_kgm2)))
        v_new = v_n + fraction * (v_target - v_n)
        rule.rebase(g_n, v_new, nominal)
        step = RebaseStep(float(t), float(fraction), v_new - v_n, v_new.copy(), nominal.mass_matrix.copy())
        self.last = step
        self._rs[kernels.RS_S_LAST], self._rs[kernels.RS_HAS_LAST] = s_now, 1.0
        self.done = fraction >= 1.0
        return step

    def advance_nominal(self, rule, t_from: float, duration_s: float) -> None:
        """Held or dropped steps from ``t_from``: the nominal moves on (``rule.advance_nominal``) step by
        step with this plan's increments, as the steps would have applied them, so a side that holds
        keeps the other side's ``g_n``."""
        n = int(round(duration_s / self.dt_s))
        for k in range(n):
            self.update(t_from + k * self.dt_s, rule)
            rule.advance_nominal(self.dt_s, self.dt_s)
        rest = duration_s - n * self.dt_s
        if rest > 1e-12:
            rule.advance_nominal(rest, self.dt_s)


#: How long before its start the live graph's servicer node makes the plan: time for it to reach the client's
#: node (published once, transient-local; on a loaded host or a lab network a message can take tens of ms).
DEFAULT_LEAD_S = 1.0


class RebaseSchedule:
    """When to re-base and onto what (scenario section ``rebase``): once the OBSW has been in
    ``post_grasp`` for ``after_post_grasp_s``, a plan from the stack's state then, starting
    ``lead_s`` later (in the live graph, the time the plan needs to reach the other node).
    The side that holds both states, or the one that plans (the servicer node), uses it."""

    def __init__(self, params: RebaseParams, lead_s: float = 0.0):
        if not (np.isfinite(lead_s) and lead_s >= 0.0):
            raise ConfigError(f'lead_s must be finite and >= 0, got {lead_s!r}')
        self.params, self.lead_s = params, float(lead_s)
        self.plan: RebasePlan | None = None

    def due(self, t: float, post_grasp_s: float | None) -> bool:
        """True once, when the plan is to be made (``post_grasp_s``: when the OBSW entered ``post_grasp``)."""
        return (self.params.enabled and self.plan is None and post_grasp_s is not None
                and t >= post_grasp_s + self.params.after_post_grasp_s - 1e-9)

    def make_plan(self, t: float, parts, nominal=None) -> RebasePlan:
        """The plan from the stack's ``parts`` at ``t`` (:func:`client_part`, :func:`servicer_part`);
        ``nominal = (dt_s, body, g_n, V_n)`` moves it on over the lead (:func:`plan_rebase`)."""
        lead = None if nominal is None else (self.lead_s, *nominal)
        self.plan = plan_rebase(t + self.lead_s, self.params.ramp_s, parts, lead)
        return self.plan


class RebaseFollower:
    """A node's side of a re-basing: the plan it was given (none before) applied around its steps.

    :meth:`accept` takes the plan (the servicer node's own, or the one it published); :meth:`before_step`
    applies the increment of the step starting at ``t``; :meth:`advance` moves the nominal on over held
    or dropped steps with the plan's increments, so every side keeps one ``g_n`` (Eq. 23)."""

    def __init__(self, dt_s: float):
        self.dt_s = float(dt_s)
        self.side: PlannedRebase | None = None
        load_kernels()           # a plan arrives while the node runs: its first step must not load them

    def accept(self, plan: RebasePlan, now_s: float) -> str:
        """'' if taken; else why not (a second, different plan) or a warning (taken late: this side's
        nominal is then not the other's)."""
        if self.side is not None:
            return '' if plan.to_list() == self.side.plan.to_list() else 'a second, different re-basing plan refused'
        self.side = PlannedRebase(plan, self.dt_s)
        late = now_s - plan.t_start
        return (f're-basing plan received {late:.3f} s after its start: this nominal leaves the other side\'s'
                if late > 1e-9 else '')

    @property
    def active(self) -> bool:
        return self.side is not None and not self.side.done

    def before_step(self, t: float, rule) -> RebaseStep | None:
        return None if self.side is None else self.side.update(t, rule)

    def advance(self, rule, t_from: float, duration_s: float) -> None:
        """``rule.advance_nominal`` over ``duration_s`` from ``t_from``, with the plan's increments if any fall in it."""
        if self.active and t_from + duration_s >= self.side.plan.t_start - 1e-9:
            self.side.advance_nominal(rule, t_from, duration_s)
        else:
            rule.advance_nominal(duration_s, self.dt_s)


_kernels_loaded = False


def load_kernels() -> None:
    """Load the compiled kernels a re-basing calls (:func:`hil_dynamics.kernels.rebase_ramp_step`, the nominal's
    twist change) from Numba's cache now, once per process: a plan's first step in a node's callback must not
    wait 10-60 ms for them. A scratch rule and plan: nothing else changes."""
    global _kernels_loaded
    if _kernels_loaded:
        return
    from hil_dynamics.client import ClientAdmittance
    from hil_dynamics.rigid_body import RigidBody

    body = RigidBody(10.0, [1.0, 2.0, 2.5])
    rule = ClientAdmittance(body, np.full(6, 0.01))
    side = PlannedRebase(plan_rebase(0.0, 1e-3, [(pin.SE3.Identity(), body.inertia, np.ones(6))]), 1e-3)
    side.update(0.0, rule)
    side.update(1e-3, rule)
    _kernels_loaded = True
