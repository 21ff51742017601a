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
(:class:`NominalRebase`): each increment is an exact re-basing, so the absolute states are
untouched and the table twists ``V_c``, ``V_s`` change smoothly (a min-jerk blend). The target
is the stack's rigid motion: the nominal frame carries the compound's locked inertia (client
plus servicer, :func:`compound_inertia_and_momentum`) and, at the end of the ramp, exactly the
compound's momentum, so from then on the nominal is the compound's unforced motion (Eq. 4
with the compound's inertia) and the tables only see the stack's internal motion.

Plain Python, no rclpy. Twists linear first, wrenches/momenta ``[f; tau]`` (:mod:`hil_dynamics.se3`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_common.errors import ConfigError

__all__ = ['NominalBody', 'NominalRebase', 'RebaseParams', 'compound_inertia_and_momentum', 'inertia_from_matrix',
           'rebase_relative']


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
        self.inertia = pin.Inertia(inertia)
        self.mass_kg = float(self.inertia.mass)
        self.mass_matrix = self.inertia.matrix()
        self.mass_matrix_inv = np.linalg.inv(self.mass_matrix)

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


def min_jerk(s: float) -> float:
    """``10 s^3 - 15 s^4 + 6 s^5`` on [0, 1]: zero velocity and acceleration at both ends."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 + s * (-15.0 + 6.0 * s))


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
    """What one application did: enough for another process to apply the same increment.

    A node that runs only one admittance (the client's) applies it with
    ``rule.rebase(rule.state.pose_nominal_in_orbit, step.twist_nominal_body,
    NominalBody(inertia_from_matrix(step.nominal_mass_matrix)))``.
    """

    t: float
    fraction: float                      # share of the remaining velocity difference applied
    twist_nominal_change: np.ndarray     # V_n' - V_n
    twist_nominal_body: np.ndarray = None     # V_n' (body, linear first)
    nominal_mass_matrix: np.ndarray = None    # 6x6 spatial inertia of the new nominal, nominal frame


@dataclass
class NominalRebase:
    """Ramp the nominal onto the stack's unforced motion, one exact re-basing per step.

    Call :meth:`start` once (e.g. when the OBSW has been in ``post_grasp`` for the settle time)
    and :meth:`update` once per admittance step, before the step, with the client rule
    (:class:`hil_dynamics.client.ClientAdmittance`), the servicer admittance
    (:class:`hil_dynamics.servicer.ServicerAdmittance`) and the arm's ``q, dq``. Between
    ``start`` and ``start + ramp_s`` each call moves ``V_n`` by the min-jerk share of what
    remains towards the stack's rigid velocity ``M^-1 h`` (its locked inertia and momentum in
    the nominal frame) and gives the nominal the compound's inertia; the last call lands on it
    exactly. Both rules get the same new nominal (the client's ``g_n``, to which the servicer's
    is equal up to rounding).
    """

    ramp_s: float = 10.0
    t_start: float | None = None
    done: bool = False
    steps: list = field(default_factory=list)

    def start(self, t: float) -> None:
        if self.t_start is None:
            self.t_start = float(t)

    @property
    def active(self) -> bool:
        return self.t_start is not None and not self.done

    def target(self, client, servicer, q_arm, dq_arm) -> tuple[pin.Inertia, np.ndarray]:
        """Locked inertia and momentum of the stack in the client's nominal frame."""
        cs, ss = client.state, servicer.state
        _, v_t = cs.absolute()
        _, v_b = ss.absolute()
        g_s = cs.pose_nominal_in_orbit.actInv(ss.pose_nominal_in_orbit * ss.pose_base_in_nominal)
        mass = servicer.model.mass_matrix(q_arm)
        momentum_servicer = mass[:6] @ np.concatenate((v_b, np.asarray(dq_arm, dtype=float)))
        body = client.body
        return compound_inertia_and_momentum([
            (cs.pose_client_in_nominal, body.inertia, body.mass_matrix @ v_t),
            (g_s, inertia_from_matrix(mass[:6, :6]), momentum_servicer)])

    def update(self, t: float, client, servicer, q_arm, dq_arm) -> RebaseStep | None:
        """Apply this step's increment (None outside the ramp)."""
        if not self.active or t < self.t_start:
            return None
        ramp = max(self.ramp_s, 1e-12)
        s_prev = min_jerk((self.steps[-1].t - self.t_start) / ramp) if self.steps else 0.0
        s_now = min_jerk((t - self.t_start) / ramp)
        fraction = 1.0 if s_now >= 1.0 else (s_now - s_prev) / (1.0 - s_prev)
        inertia, momentum = self.target(client, servicer, q_arm, dq_arm)
        nominal = NominalBody(inertia)
        g_n = client.state.pose_nominal_in_orbit
        v_n = client.state.twist_nominal_body
        v_target = nominal.mass_matrix_inv @ momentum
        v_new = v_n + fraction * (v_target - v_n)
        client.rebase(g_n, v_new, nominal)
        servicer.rebase(g_n, v_new, nominal)
        step = RebaseStep(float(t), float(fraction), v_new - v_n, v_new.copy(), nominal.mass_matrix.copy())
        self.steps.append(step)
        self.done = fraction >= 1.0
        return step
