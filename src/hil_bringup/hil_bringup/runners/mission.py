"""The Envisat capture mission without DDS: HIL lockstep runner and absolute reference ("GNCDE").

Two simulations of the same mission (seed 004 §III-C, §V), driven by the same OBSW rule
(:class:`hil_admittance.obsw.ObswController`) and the same contact rule
(:class:`hil_dynamics.contact.GraspContact`), both sampled at the OBSW and sensor rates
with zero-order hold:

* :class:`HilMission` -- the facility as seed 004 Fig. 7 builds it, with the rule objects the
  ROS nodes use: the client admittance (Eq. 11, :class:`ClientAdmittance`), the servicer
  admittance (Eq. 18) with the arm torques of Eq. (22) applied to a simulated torque-
  controlled arm on ground in gravity (Eq. 20, :class:`ServicerHilLockstep`, ideal tracking
  of the industrial robots: Assumption 1). The contact acts between the two lab robots
  (relative poses in the nominal frame); the OBSW reads the Eq. (23) absolute states.
* :class:`AbsoluteMission` -- the reference: the servicer as a free-floating multibody
  (:class:`hil_dynamics.free_floating.FreeFloatingServicer`: free-flyer root, forward dynamics
  compiled and checked against Pinocchio's ABA) and the client as a rigid body (Eq. 2), both
  integrated in the orbit frame, no nominal, no robots, no Eq. (11)/(18)/(22)/(23).

Both record the same :class:`MissionRecord`. Plain Python, no rclpy.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pinocchio as pin

from hil_admittance import obsw_kernel
from hil_admittance.obsw import ObswController, ObswGains
from hil_bringup.runners import mission_kernel
from hil_bringup.scenario import MissionScenario, pose_nominal_in_lab
from hil_dynamics.client import AbsoluteRigidBody, ClientAdmittance, ClientState
from hil_dynamics import kernels
from hil_dynamics.contact import LATCHED, MISSED, OPEN, GraspContact, reaction_on_client, relative_twist
from hil_dynamics.free_floating import FreeFloatingServicer
from hil_dynamics.passivity import ClientPort, PassivityController
from hil_dynamics.rebase import NominalBody, PlannedRebase, RebaseSchedule, client_part, servicer_part
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel, servicer_initial_state
from hil_dynamics.servicer_lockstep import GroundArmOnMovingBase, ServicerHilLockstep
from hil_common.errors import ConfigError, SimulationFailed

RECORD_FIELDS = (
    't', 'phase', 'pos_base_in_client', 'rpy_base_in_client', 'twist_base_rel_client', 'wrench_base_com', 'tau_arm',
    'base_error', 'tool_error', 'momentum_in_orbit', 'wrench_tool', 'pos_grasp_in_nominal_cmd',
    'pos_base_in_nominal_cmd', 'pos_grasp_in_orbit', 'pos_base_in_orbit', 'q_arm', 'gripper', 'pose_client_in_orbit',
    'twist_client_body', 'pose_base_in_orbit', 'twist_base_body', 'dq_arm', 'pose_client_in_nominal_cmd',
    'pose_base_in_nominal_cmd', 'passivity_client', 'passivity_servicer')


@dataclass
class MissionRecord:
    """Samples of a mission run (lists while running, arrays after :meth:`finish`)."""

    t: list = field(default_factory=list)                         # [s]
    phase: list = field(default_factory=list)                     # OBSW phase name
    pos_base_in_client: list = field(default_factory=list)        # servicer CoM in the client CoM frame [m] (Fig. 8)
    rpy_base_in_client: list = field(default_factory=list)        # relative orientation, roll-pitch-yaw [rad] (Fig. 9)
    twist_base_rel_client: list = field(default_factory=list)     # base body twist relative to the client, base axes (Fig. 13)
    wrench_base_com: list = field(default_factory=list)           # F_b [N, N m]
    tau_arm: list = field(default_factory=list)                   # tau [N m]
    base_error: list = field(default_factory=list)                # OBSW base error [m, rad]
    tool_error: list = field(default_factory=list)                # OBSW tool-to-fixture error [m, rad]
    momentum_in_orbit: list = field(default_factory=list)         # [P; L] of servicer + client, orbit frame/origin
    wrench_tool: list = field(default_factory=list)               # contact wrench on the tool [N, N m]
    pos_grasp_in_nominal_cmd: list = field(default_factory=list)  # client table command: grasp point (lab/nominal) [m]
    pos_base_in_nominal_cmd: list = field(default_factory=list)   # servicer table command: base CoM (lab/nominal) [m]
    pos_grasp_in_orbit: list = field(default_factory=list)        # what an absolute scheme would command [m]
    pos_base_in_orbit: list = field(default_factory=list)         # idem for the servicer [m]
    q_arm: list = field(default_factory=list)                     # [rad]
    gripper: list = field(default_factory=list)                   # contact state name
    # For the recording: poses as [x y z qx qy qz qw], twists linear first.
    pose_client_in_orbit: list = field(default_factory=list)      # g_t (Eq. 23)
    twist_client_body: list = field(default_factory=list)         # V_t
    pose_base_in_orbit: list = field(default_factory=list)        # g_b (Eq. 23)
    twist_base_body: list = field(default_factory=list)           # V_b
    dq_arm: list = field(default_factory=list)                    # [rad/s]
    pose_client_in_nominal_cmd: list = field(default_factory=list)  # g_c: client table command (NaN without robots)
    pose_base_in_nominal_cmd: list = field(default_factory=list)  # g_s: servicer table command (NaN without robots)
    # Passivity observers of the two admittance ports (hil_dynamics.passivity), cumulative [J] and
    # the damping rate [1/s]: [E_obs, E_port, E_integration, E_dissipated, beta] (NaN without robots).
    passivity_client: list = field(default_factory=list)
    passivity_servicer: list = field(default_factory=list)

    def finish(self) -> 'MissionRecord':
        for name in RECORD_FIELDS:
            values = getattr(self, name)
            setattr(self, name, np.array(values) if name not in ('phase', 'gripper') else list(values))
        return self

    def exit_time(self, which: str, box_m) -> float | None:
        """First time a recorded command leaves a box centred on its start (None if never)."""
        p = np.asarray(getattr(self, which))
        outside = np.any(np.abs(p - p[0]) > 0.5 * np.asarray(box_m), axis=1)
        return float(self.t[np.argmax(outside)]) if outside.any() else None


# The wrench of an open gripper, shared by every step that has no contact. Never written (the rules copy what they
# keep); not flagged read-only, for Numba would compile another version of each kernel it reaches for that flag.
_NO_WRENCH = np.zeros(6)


def _no_ramp() -> tuple:
    """A side's re-basing arguments of ``mission_kernel.hil_steps`` with no increment to apply (``RS_ACTIVE`` 0),
    of the types ``PlannedRebase.loop_args`` gives (one compiled specialisation)."""
    return (np.zeros(kernels.N_RS), np.zeros(12), np.zeros(6), np.zeros(12), np.zeros(6), 1.0, np.zeros(9),
            np.zeros(9), np.zeros((6, 6)), np.zeros((6, 6)), 1.0, np.zeros(9), np.zeros(9))


def build_controller(scenario: MissionScenario, model: ServicerModel | None = None) -> ObswController:
    """The example OBSW rule configured from the scenario."""
    s = scenario.servicer
    model = model or ServicerModel(s.urdf, s.ee_frame)
    return ObswController(model, s.pose_tool_in_flange, scenario.client.pose_grasp_in_client,
                          s.pose_tool_at_grasp_in_grasp, s.pose_base_in_client_desired, s.q_arm_0, scenario.obsw)


class MissionLoop:
    """Shared sampling logic: OBSW at its rate, contact evaluated per sample, recording."""

    def __init__(self, scenario: MissionScenario, controller: ObswController | None, dt: float | None,
                 forced: bool):
        if scenario.servicer is None:
            raise ConfigError(f'scenario {scenario.name!r} has no servicer section')
        self.scenario = scenario
        self.dt = 1.0 / scenario.admittance_hz if dt is None else float(dt)
        self.obsw_every = max(1, int(round((1.0 / scenario.obsw_hz) / self.dt)))
        s = scenario.servicer
        self.model = ServicerModel(s.urdf, s.ee_frame)
        self.controller = controller if controller is not None else (build_controller(scenario, self.model) if forced else None)
        self.contact = GraspContact(scenario.contact, s.pose_tool_at_grasp_in_grasp)
        self.pose_tool_in_flange = s.pose_tool_in_flange
        self.pose_grasp_in_client = scenario.client.pose_grasp_in_client
        self._tool_in_flange = kernels.pose_array(self.pose_tool_in_flange)        # for latched_wrenches
        self._grasp_in_client = kernels.pose_array(self.pose_grasp_in_client)
        self._rest = (None, None)                   # the latched rest pose and its array
        self.port_wrench = None                     # (q, F_e, J_b^T F_e) of the last latched_wrenches
        self.k = 0
        self.t = 0.0
        self.wrench_base_com = np.zeros(6)
        self.tau_arm = np.zeros(self.model.n)
        self.command = None
        self.wrench_tool = np.zeros(6)
        self.record = MissionRecord()
        self.compiled_steps = 0             # the steps run by compiled quiet calls (steps)

    # -- to be provided by the two simulations ---------------------------------------------
    def lab_states(self):
        """``(g_client, V_client, g_base, V_base, q, dq)`` in the frame the bodies are realised in."""
        raise NotImplementedError

    def onboard_states(self):
        """``(g_t, V_t, g_b, V_b, q, dq)`` in orbit (what the OBSW reads)."""
        raise NotImplementedError

    def onboard_state_arrays(self):
        """:meth:`onboard_states` with the poses as 12-arrays (read only), for an OBSW that takes them
        (``takes_pose_arrays``); a runner that overrides :meth:`onboard_states` alone gets its ``pin.SE3``."""
        return self.onboard_states()

    def table_commands(self):
        """``(grasp point on the client table, base CoM on the servicer table)`` [m]; NaN without robots."""
        return np.full(3, np.nan), np.full(3, np.nan)

    def table_poses(self):
        """``(g_c, g_s)`` commanded to the two tables as [x y z qx qy qz qw]; NaN without robots."""
        return np.full(7, np.nan), np.full(7, np.nan)

    def passivity_record(self):
        """``(client, servicer)`` passivity observer values (:meth:`PassivityOutput.as_list`); NaN without robots."""
        return np.full(5, np.nan), np.full(5, np.nan)

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------
    def tool_pose_twist(self, g_base, v_base, q, dq):
        """The tool's pose in the frame of ``g_base`` and its body twist (:meth:`ServicerModel.tool_pose_and_jacobian`)."""
        pose_tool_in_base, jac_tool = self.model.tool_pose_and_jacobian(q, self.pose_tool_in_flange)
        return g_base * pose_tool_in_base, jac_tool @ np.concatenate((v_base, dq))

    def lab_state_arrays(self):
        """:meth:`lab_states` with the two poses as 12-arrays (:func:`hil_dynamics.kernels.pose_array`)."""
        g_c, v_c, g_s, v_s, q, dq = self.lab_states()
        return kernels.pose_array(g_c), v_c, kernels.pose_array(g_s), v_s, q, dq

    def latched_wrenches(self):
        """``(wrench_tool, wrench_flange, wrench_client)`` of the latched gripper in one compiled call
        (:func:`hil_dynamics.kernels.latched_grasp_step`: the flange's kinematics, then
        :func:`~hil_dynamics.kernels.latched_grasp_wrench`): what :meth:`contact_wrench_reference`, the flange
        wrench and :func:`reaction_on_client` give, tested against them. The servicer port's wrench ``J_b^T F_e``
        it also gives is kept for this step's passivity observer (:attr:`port_wrench`)."""
        g_c, v_c, g_s, v_s, q, dq = self.lab_state_arrays()
        c = self.contact
        if self._rest[0] is not c.pose_tcp_in_grasp_rest:
            self._rest = (c.pose_tcp_in_grasp_rest, kernels.pose_array(c.pose_tcp_in_grasp_rest))
        w_tool, w_flange, w_client, w_port = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
        v_c, v_s, dq = (np.ascontiguousarray(v, dtype=float) for v in (v_c, v_s, dq))
        kin, n = self.model.ee_chain, self.model.n
        if kin is not None and type(q) is np.ndarray and q.dtype == np.float64 and q.shape == (n,) \
                and q.flags.c_contiguous:
            kernels.latched_grasp_step(*kin, q, g_c, v_c, g_s, v_s, dq, self._tool_in_flange, self._grasp_in_client,
                                       self._rest[1], c.stiffness, c.damping, w_tool, w_flange, w_client, w_port)
        else:       # Pinocchio's kinematics (not a chain), or joints to lay out first
            pose_flange, jac = self.model.ee_pose_array_and_jacobian(q)
            kernels.latched_grasp_wrench(g_c, v_c, g_s, v_s, pose_flange, jac, dq, self._tool_in_flange,
                                         self._grasp_in_client, self._rest[1], c.stiffness, c.damping, w_tool, w_flange,
                                         w_client)
            w_port = jac[:, :6].T @ w_flange
        self.port_wrench = (q, w_flange, w_port)
        return w_tool, w_flange, w_client

    def contact_wrench_reference(self):
        """Contact wrench on the tool (tool frame) from the lab-frame states; updates the gripper."""
        g_c, v_c, g_s, v_s, q, dq = self.lab_states()
        pose_tool, twist_tool = self.tool_pose_twist(g_s, v_s, q, dq)
        pose_grasp = g_c * self.pose_grasp_in_client
        twist_grasp = self.pose_grasp_in_client.actInv(pin.Motion(v_c)).vector
        pose_tool_in_grasp = pose_grasp.actInv(pose_tool)
        self.contact.update(self.t, pose_tool_in_grasp)
        w = self.contact.wrench(pose_tool_in_grasp, relative_twist(pose_tool_in_grasp, twist_grasp, twist_tool))
        return w, g_c.actInv(pose_tool)

    def momentum(self, g_t, v_t, g_b, v_b, q, dq) -> np.ndarray:
        h_base = self.model.mass_matrix(q)[:6] @ np.concatenate((v_b, dq))   # whole servicer, base frame
        client = self.scenario.client.body
        return g_b.act(pin.Force(h_base)).vector + client.momentum_in_parent(g_t, v_t)

    def record_sample(self) -> None:
        g_t, v_t, g_b, v_b, q, dq = self.onboard_states()
        rel = g_t.actInv(g_b)
        r = self.record
        r.t.append(self.t)
        r.phase.append(self.command.phase if self.command is not None else 'unforced')
        r.pos_base_in_client.append(rel.translation.copy())
        r.rpy_base_in_client.append(pin.rpy.matrixToRpy(rel.rotation))
        r.twist_base_rel_client.append(relative_twist(rel, v_t, v_b))
        r.wrench_base_com.append(self.wrench_base_com.copy())
        r.tau_arm.append(self.tau_arm.copy())
        r.base_error.append(self.command.base_error if self.command is not None else np.full(6, np.nan))
        r.tool_error.append(self.command.tool_error if self.command is not None else np.full(6, np.nan))
        r.momentum_in_orbit.append(self.momentum(g_t, v_t, g_b, v_b, q, dq))
        r.wrench_tool.append(self.wrench_tool.copy())
        grasp_cmd, base_cmd = self.table_commands()
        r.pos_grasp_in_nominal_cmd.append(grasp_cmd)
        r.pos_base_in_nominal_cmd.append(base_cmd)
        r.pos_grasp_in_orbit.append((g_t * self.pose_grasp_in_client).translation.copy())
        r.pos_base_in_orbit.append(g_b.translation.copy())
        r.q_arm.append(np.array(q, dtype=float))
        r.gripper.append(self.contact.state)
        r.pose_client_in_orbit.append(pin.SE3ToXYZQUAT(g_t))
        r.twist_client_body.append(np.array(v_t, dtype=float))
        r.pose_base_in_orbit.append(pin.SE3ToXYZQUAT(g_b))
        r.twist_base_body.append(np.array(v_b, dtype=float))
        r.dq_arm.append(np.array(dq, dtype=float))
        pose_c, pose_s = self.table_poses()
        r.pose_client_in_nominal_cmd.append(pose_c)
        r.pose_base_in_nominal_cmd.append(pose_s)
        pc_client, pc_servicer = self.passivity_record()
        r.passivity_client.append(pc_client)
        r.passivity_servicer.append(pc_servicer)

    def _tick(self) -> None:
        """The OBSW's tick, at its rate: its command, held until the next one."""
        if self.k % self.obsw_every == 0 and self.controller is not None:
            self.command = self.controller.update(self.t, *(
                self.onboard_state_arrays() if getattr(self.controller, 'takes_pose_arrays', False)
                else self.onboard_states()))
            self.wrench_base_com, self.tau_arm = self.command.wrench_base_com, self.command.tau_arm
            if self.command.close_gripper:
                self.contact.command_close(self.t)

    def _advance_one(self) -> None:
        """The step after the tick: the gripper's wrenches, then :meth:`advance`."""
        if self.contact.state in (OPEN, MISSED):
            # An open gripper exerts nothing and its state machine waits for a close command: no tool
            # kinematics (GraspContact.update and .wrench would change nothing and return zeros).
            self.wrench_tool = wrench_flange = wrench_client = _NO_WRENCH
        elif self.contact.state == LATCHED:
            self.wrench_tool, wrench_flange, wrench_client = self.latched_wrenches()
        else:           # closing: the readable path, whose GraspContact.update decides the latch
            self.wrench_tool, pose_tool_in_client = self.contact_wrench_reference()
            wrench_flange = self.pose_tool_in_flange.act(pin.Force(self.wrench_tool)).vector
            wrench_client = reaction_on_client(pose_tool_in_client, self.wrench_tool)
        self.advance(self.wrench_base_com, self.tau_arm, wrench_flange, wrench_client)
        self.k += 1
        self.t = self.k * self.dt

    def step(self) -> None:
        """One step in Python: the OBSW's tick if due, the gripper's wrenches, :meth:`advance`."""
        self._tick()
        self._advance_one()

    def steps(self, n: int) -> None:
        """``n`` steps: what ``n`` calls of :meth:`step` do, with the quiet stretches (the gripper open or latched)
        in one compiled call each where the runner has one (:meth:`quiet_steps`; a runner with a step of its own
        runs that)."""
        n = int(n)
        if type(self).quiet_steps is MissionLoop.quiet_steps or type(self).step is not MissionLoop.step:
            for _ in range(n):
                self.step()
            return
        while n > 0:
            self._tick()
            if self.contact.state in (OPEN, MISSED, LATCHED):
                done, refused = self.quiet_steps(n)
                if done:
                    self.k += done
                    self.t = self.k * self.dt
                    self.compiled_steps += done
                    n -= done
                    if not refused:
                        continue
            self._advance_one()         # (a refused step's tick, if it had one, was the compiled call's)
            n -= 1

    def quiet_steps(self, n: int) -> tuple[int, bool]:
        """Run up to ``n`` steps after the tick of the first (the gripper open or latched) in one compiled call, as
        :meth:`_advance_one` and the OBSW's ticks would; return ``(steps run, refused)``: ``refused``, the next step
        was not run for an input or state that is not finite (its Python step names it). ``(0, False)``: none run,
        the caller steps in Python. A runner without such a call runs none."""
        return 0, False

    def _quiet_span(self, n: int) -> tuple[int, tuple]:
        """``(m, ticks)``: how many of the next ``n`` steps one compiled quiet call may run, and its OBSW arguments
        ``(steps_per_tick, mode, t_approach, approach_s, arrays)`` (``mission_kernel``): the OBSW's ticks until one
        that may switch its phase (``ObswController.loop_ticks``) or close the gripper; ``mode`` ``NO_TICKS`` (the
        call stops before the next tick) where the controller has no compiled ticks."""
        if self.controller is None:
            return n, (self.obsw_every, mission_kernel.NO_TICKS, 0.0, 1.0, self._no_obsw_arrays())
        loop_ticks = getattr(self.controller, 'loop_ticks', None)
        ticks = loop_ticks() if loop_ticks is not None else None
        to_tick = self.obsw_every - self.k % self.obsw_every
        if ticks is None or (self.command.close_gripper and self.contact.state != LATCHED):
            return min(n, to_tick), (self.obsw_every, mission_kernel.NO_TICKS, 0.0, 1.0, self._no_obsw_arrays())
        mode, t_approach, approach_s, t_limit, arrays = ticks
        k_tick = self.k + to_tick
        while k_tick < self.k + n and k_tick * self.dt < t_limit:
            k_tick += self.obsw_every
        return min(n, k_tick - self.k), (self.obsw_every, mode, t_approach, approach_s, arrays)

    def _no_obsw_arrays(self) -> tuple:
        """OBSW arrays of the types ``ObswController.loop_ticks`` gives (one compiled specialisation), for a call
        that runs no tick (never read)."""
        arrays = self.__dict__.get('_obsw_arrays_unused')
        if arrays is None:
            identity = pin.SE3.Identity()
            arrays = self._obsw_arrays_unused = obsw_kernel.ObswArrays.of(
                self.model, ObswGains(), identity, identity, identity, np.zeros(self.model.n)).args
        return arrays

    def _quiet_outcome(self, done: int, fo: np.ndarray) -> bool:
        """After a compiled quiet call that returned ``done``: whether it ran steps. The command of its newest OBSW
        tick, if it ran one, is held as :meth:`_tick` holds it (also for a step it then refused); a step that failed
        half-way with finite inputs raises."""
        if done < 0:
            raise SimulationFailed(f'{type(self).__name__}: the compiled step at t = {(self.k - done - 1) * self.dt:.6f}'
                                   ' s failed half-way with finite inputs (a state that is no longer finite)')
        if fo[mission_kernel.FO_TICKS]:
            self.command = self.controller.loop_command()
            self.wrench_base_com, self.tau_arm = self.command.wrench_base_com, self.command.tau_arm
        return done > 0

    def _quiet_contact(self, latched: bool) -> tuple:
        """The gripper's arguments of the compiled quiet steps (``mission_kernel``): whether it is latched, the EE's
        compiled kinematics, the tool and grasp frames, the latched rest pose, ``K``, ``D`` and the four wrenches'
        arrays (new: the tool's is kept as :attr:`wrench_tool`)."""
        c = self.contact
        if latched and self._rest[0] is not c.pose_tcp_in_grasp_rest:
            self._rest = (c.pose_tcp_in_grasp_rest, kernels.pose_array(c.pose_tcp_in_grasp_rest))
        rest = self._rest[1] if latched else self._tool_in_flange        # (not read when open)
        return (latched, *self.model.ee_chain, self._tool_in_flange, self._grasp_in_client, rest, c.stiffness,
                c.damping, np.empty(6), np.empty(6), np.empty(6), np.empty(6))

    def _held_inputs(self):
        """``(F_b, tau)`` as the compiled quiet steps take them (new float64 vectors: the call's ticks write them),
        or None (the Python step then checks them)."""
        f_b, tau = self.wrench_base_com, self.tau_arm
        if type(f_b) is np.ndarray and type(tau) is np.ndarray and f_b.dtype == np.float64 \
                and tau.dtype == np.float64 and f_b.shape == (6,) and tau.shape == (self.model.n,):
            return f_b.copy(), tau.copy()
        return None

    def run(self, duration_s: float, record_every_s: float = 0.05,
            progress: Callable[[float, 'MissionLoop'], None] | None = None) -> MissionRecord:
        n = int(round(duration_s / self.dt))
        every = max(1, int(round(record_every_s / self.dt)))
        for i in range(0, n + 1, every):
            if self.command is None and self.controller is not None:
                self.command = self.controller.update(self.t, *self.onboard_states())
            self.record_sample()
            if progress is not None:
                progress(self.t, self)
            self.steps(min(every, n - i))
        if n % every:
            self.record_sample()
            if progress is not None:
                progress(self.t, self)
        return self.record.finish()


def initial_states(scenario: MissionScenario):
    """Seed 004 §III-C: ``g_n(0) = g_t(0) = I``, ``V_n(0) = V_t(0)``, base co-moving with the client."""
    c, s = scenario.client, scenario.servicer
    g_b0 = s.pose_base_in_client_0                    # client at the orbit origin at t = 0
    return servicer_initial_state(pin.SE3.Identity(), c.twist_client_body_0, g_b0), g_b0


class HilMission(MissionLoop):
    """The facility loop of seed 004 Fig. 7 with ideal robots (see the module docstring).

    ``forced=False`` sets ``F_b = tau = 0`` (the unforced validation of seed 004 §V).
    """

    def __init__(self, scenario: MissionScenario, controller: ObswController | None = None, dt: float | None = None,
                 forced: bool = True, gravity_m_s2: float = 9.80665, passivity_control: bool = False,
                 robot_delay_steps: int = 0):
        super().__init__(scenario, controller, dt, forced)
        c, s = scenario.client, scenario.servicer
        init, _ = initial_states(scenario)
        self.client = ClientAdmittance(c.body, c.twist_client_body_0)
        nominal_in_lab = pose_nominal_in_lab(scenario)
        adm = ServicerAdmittance(self.model, c.body, c.twist_client_body_0, None, init.pose_base_in_nominal,
                                 init.twist_base_rel_body)
        # One ServicerModel for the admittance and the feed-forward: the fused lockstep step then
        # gets tau_ff2 + tau_ff3 from the Coriolis forces it already computes (docs/performance.md).
        ff = ArmFeedForward(self.model, nominal_in_lab, gravity_m_s2)
        ground = GroundArmOnMovingBase(s.urdf, s.ee_frame, gravity_m_s2)
        self.servicer = ServicerHilLockstep(adm, ff, ground, s.q_arm_0, np.zeros(self.model.n))
        # Post-grasp re-basing of the nominal onto the stack (hil_dynamics.rebase; scenario 'rebase').
        params = getattr(scenario, 'rebase', None)
        # One plan for both admittances, each applying it to its own nominal, as the live graph's nodes do.
        self.rebase = RebaseSchedule(params) if params is not None and params.enabled and forced else None
        self.rebase_sides: tuple[PlannedRebase, PlannedRebase] | None = None     # (client, servicer)
        # Passivity observers of both admittance ports (hil_dynamics.passivity). The robots are
        # ideal (measured twist = commanded), so they see what the loop's sampling creates: the
        # zero-order hold of the contact wrench and, for the client, its integrator. They act
        # (damping -beta M V) only with passivity_control=True.
        rate = scenario.passivity.max_rate_per_s if getattr(scenario, 'passivity', None) is not None else 0.0
        self.client_port = ClientPort(self.client, rate, enabled=passivity_control)   # Eq. 11 with its port's observer
        self.passivity_client = self.client_port.controller
        self.passivity_servicer = PassivityController(self.model.mass_matrix(s.q_arm_0)[:6, :6], rate,
                                                      enabled=passivity_control)
        self._passivity_out = None
        # Tables that realise their commands robot_delay_steps samples late (0: ideal, Assumption 1):
        # the contact and the passivity observers then see the delayed table poses and twists.
        if robot_delay_steps < 0:
            raise ConfigError(f'robot_delay_steps must be >= 0, got {robot_delay_steps!r}')
        self._tables = collections.deque(maxlen=robot_delay_steps + 1) if robot_delay_steps else None

    def lab_states(self):
        cs, ss = self.client.state, self.servicer.admittance.state
        if self._tables:
            return (*self._tables[0], self.servicer.q_arm, self.servicer.dq_arm)
        return (cs.pose_client_in_nominal, cs.twist_client_rel_body, ss.pose_base_in_nominal, ss.twist_base_rel_body,
                self.servicer.q_arm, self.servicer.dq_arm)

    def lab_state_arrays(self):
        if self._tables or type(self).lab_states is not HilMission.lab_states:   # delayed or overridden states
            return super().lab_state_arrays()
        cs, ss = self.client.state, self.servicer.admittance.state
        return (cs.pose_arrays()[1], cs.twist_client_rel_body, ss.pose_arrays()[1], ss.twist_base_rel_body,
                self.servicer.q_arm, self.servicer.dq_arm)

    def onboard_states(self):
        g_t, v_t = self.client.state.absolute()                  # Eq. (23)
        g_b, v_b = self.servicer.admittance.state.absolute()     # Eq. (23)
        return g_t, v_t, g_b, v_b, self.servicer.q_arm, self.servicer.dq_arm

    def onboard_state_arrays(self):
        if type(self).onboard_states is not HilMission.onboard_states:
            return self.onboard_states()
        g_t, v_t = self.client.state.absolute_arrays()                  # Eq. (23)
        g_b, v_b = self.servicer.admittance.state.absolute_arrays()     # Eq. (23)
        return g_t, v_t, g_b, v_b, self.servicer.q_arm, self.servicer.dq_arm

    def table_commands(self):
        cs, ss = self.client.state, self.servicer.admittance.state
        return (cs.pose_client_in_nominal * self.pose_grasp_in_client).translation.copy(), ss.pose_base_in_nominal.translation.copy()

    def table_poses(self):
        cs, ss = self.client.state, self.servicer.admittance.state
        return pin.SE3ToXYZQUAT(cs.pose_client_in_nominal), pin.SE3ToXYZQUAT(ss.pose_base_in_nominal)

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        if self.rebase is not None:
            post = self.controller.phase_times.get('post_grasp') if self.controller is not None else None
            if self.rebase.due(self.t, post):
                adm = self.servicer.admittance
                plan = self.rebase.make_plan(self.t, [
                    client_part(self.client.state.pose_client_in_nominal, self.client.body, self.client.state.absolute()[1]),
                    servicer_part(adm, self.servicer.q_arm, self.servicer.dq_arm)])
                self.rebase_sides = (PlannedRebase(plan, self.dt), PlannedRebase(plan, self.dt))
            if self.rebase_sides is not None:
                self.rebase_update(self.t)
        cs, ss = self.client.state, self.servicer.admittance.state
        if self._tables is not None:
            self._tables.append((cs.pose_client_in_nominal, cs.twist_client_rel_body, ss.pose_base_in_nominal,
                                 ss.twist_base_rel_body))
        measured_c, measured_s = self.measured_table_twists()
        q = self.servicer.q_arm
        if wrench_flange is _NO_WRENCH:        # an open gripper: J_b^T F_e is zero, no Jacobian needed
            wrench_port_s = _NO_WRENCH
        else:                                  # latched_wrenches' J_b^T F_e if it is of these joints and wrench
            known = self.port_wrench
            wrench_port_s = (known[2] if known is not None and known[0] is q and known[1] is wrench_flange
                             else self.model.ee_jacobian(q)[:, :6].T @ wrench_flange)
        # the client's port and step, then the servicer's port and the loop's step under its damping (one compiled
        # call each; the servicer's observer sees the step's start, as it did before the client's step)
        self.client_port.step(wrench_client_com, self.dt, measured_c)
        _, out_s = self.servicer.step_with_port(self.dt, wrench_base_com, tau_arm, wrench_flange,
                                                self.passivity_servicer, measured_s, wrench_port_s)
        self._passivity_out = out_s        # the client port's output is read from it when recorded

    def _quiet_setup(self):
        """What :meth:`quiet_steps` passes on every call (the constants' arrays), or False where this runner's
        steps are not those of ``mission_kernel.hil_steps``: a subclass's own states or step, delayed tables, a
        model that is no chain, the servicer's step in another form or ports of another size."""
        own = all(getattr(type(self), name) is getattr(HilMission, name) for name in (
            'advance', 'lab_states', 'lab_state_arrays', 'measured_table_twists', 'rebase_update', 'onboard_states',
            'onboard_state_arrays'))
        sv, ff = self.servicer, self.servicer.feedforward
        w = sv.compiled_chains()
        if not own or self._tables is not None or self.model.ee_chain is None or not w or w.ground_mode != 2 \
                or ff.use_ff2 != ff.use_ff3 or self.passivity_servicer.n != 6 or self.client_port.controller.n != 6 \
                or not hasattr(self.client, 'step_arrays') or not self.dt > 0.0:
            return False
        return w

    def _quiet_rebase(self, m: int) -> tuple[int, bool]:
        """``(count, ramp)``: how many of the next ``m`` steps the compiled call can run as :meth:`advance` would
        re-base (the plan made and each side's first increment are Python's), and whether they take the ramp's
        increments (``PlannedRebase.loop_args``)."""
        if self.rebase is None:
            return m, False
        if self.rebase_sides is None:
            post = self.controller.phase_times.get('post_grasp') if self.controller is not None else None
            count = 0
            while count < m and not self.rebase.due((self.k + count) * self.dt, post):
                count += 1
            return count, False
        if all(side.done for side in self.rebase_sides):
            return m, False
        if all(side.free is not None for side in self.rebase_sides):
            return m, True
        t_start = self.rebase_sides[0].plan.t_start
        count = 0
        while count < m and (self.k + count) * self.dt < t_start - 1e-9:
            count += 1
        return count, False

    def quiet_steps(self, n: int) -> tuple[int, bool]:
        """Up to ``n`` steps of :meth:`advance` and the OBSW's ticks in one call of
        :func:`hil_bringup.runners.mission_kernel.hil_steps` (the same kernels in the same order, the re-basing
        ramp's increments included; ``test_envisat_mission`` and ``test_rebase_mission`` require the same records),
        on new arrays that the states after it own."""
        w = self.__dict__.get('_quiet')
        if w is None:
            w = self._quiet = self._quiet_setup()
        held = self._held_inputs() if w is not False else None
        if held is None:
            return 0, False
        m, ticks = self._quiet_span(n)
        m, ramp = self._quiet_rebase(m)
        if m <= 0:
            return 0, False
        latched = self.contact.state == LATCHED
        contact = self._quiet_contact(latched)
        cp, sp, n = self.client_port, self.passivity_servicer, self.model.n
        cc = cp.controller
        client_arrays, constants = self.client.step_arrays()
        ss = self.servicer.admittance.state
        poses, x = np.empty((2, 12)), np.empty(12 + 2 * n)
        poses[0], poses[1] = ss.pose_arrays()
        x[:6], x[6:12], x[12:12 + n], x[12 + n:] = (ss.twist_nominal_body, ss.twist_base_rel_body, self.servicer.q_arm,
                                                   self.servicer.dq_arm)
        nom_m6, nom_m6_inv = self.servicer.admittance.nominal_matrices()
        if ramp:      # the increments write each side's new nominal inertia: into new arrays
            side_s, side_c = self.rebase_sides[1], self.rebase_sides[0]
            ramp_s, ramp_c = side_s.loop_args(), side_c.loop_args()
            nom_m6, nom_m6_inv = nom_m6.copy(), nom_m6_inv.copy()
            constants = (*constants[:3], constants[3].copy(), constants[4].copy())
            last_before = [side._rs[kernels.RS_T_LAST] for side in (side_s, side_c)]
        else:
            ramp_s = ramp_c = _no_ramp()
        vectors = [np.empty(6) for _ in range(4)]         # each side's V_n before and after its newest increment
        fo = np.zeros(mission_kernel.N_FO)
        fo[mission_kernel.FO_T_CLIENT], fo[mission_kernel.FO_T_SERVICER] = self.client.state.t, ss.t
        fo[mission_kernel.FO_C_E_INT] = cp.integration_j
        c_wrench_pc, s_wrench_pc = np.empty(6), np.empty(6)
        done = mission_kernel.hil_steps(
            m, self.dt, *contact, cc._acc, cc._prev, cc.mass_matrix, cc.enabled, cc.max_rate_per_s, cc.threshold_j,
            c_wrench_pc, np.empty(6), *client_arrays, *constants, sp._acc, sp._prev, sp.mass_matrix, sp.enabled,
            sp.max_rate_per_s, sp.threshold_j, s_wrench_pc, poses[0], x[:6], poses[1], x[6:12], x[12:12 + n],
            x[12 + n:], *held, w.ee_joint_o, w.placement_o, w.fext_o, w.fext_g, w.co, w.lab_gravity, w.nominal_in_lab,
            nom_m6, nom_m6_inv, *self.servicer.feedforward.kernel_weights(), w.work, w.work_ic, np.empty((2, 12)),
            np.empty(12 + 2 * n), fo, self.k, ramp_s, vectors[0], vectors[1], ramp_c, vectors[2], vectors[3], *ticks)
        if not self._quiet_outcome(done, fo):
            return 0, True
        self.client.state = ClientState.of_arrays(float(fo[mission_kernel.FO_T_CLIENT]), *client_arrays)
        cp.adopt(float(fo[mission_kernel.FO_C_EXCESS]), float(fo[mission_kernel.FO_C_PENDING]), c_wrench_pc,
                 float(fo[mission_kernel.FO_C_E_INT]))
        self.servicer._adopt(float(fo[mission_kernel.FO_T_SERVICER]), poses, x)
        self._passivity_out = sp.output(float(fo[mission_kernel.FO_S_EXCESS]), float(fo[mission_kernel.FO_S_PENDING]),
                                        s_wrench_pc)
        if ramp:
            for side, rule, (m6, m6_inv), (v_old, v_new), t_last in zip(
                    (side_s, side_c), (self.servicer.admittance, self.client),
                    ((nom_m6, nom_m6_inv), constants[3:]), (vectors[:2], vectors[2:]), last_before):
                side.loop_leave()
                rs = side._rs
                if rs[kernels.RS_T_LAST] != t_last:
                    # the newest increment's record, and the rule's nominal the one it gave (its twists are the
                    # state's already: rebase_nominal_twist with them changes nothing else)
                    side.loop_record(v_old, v_new, m6)
                    state = rule.state
                    rule.rebase_nominal_twist(state.twist_nominal_body, NominalBody.of_matrices(m6, m6_inv),
                                              state._twist_rel)
        self.wrench_tool = contact[-4] if latched else _NO_WRENCH
        self.port_wrench = None
        return done, done < m

    def rebase_update(self, t: float):
        """This step's re-basing increment on both sides (the client's :class:`RebaseStep`, or None)."""
        client_side, servicer_side = self.rebase_sides
        servicer_side.update(t, self.servicer.admittance)
        return client_side.update(t, self.client)

    def measured_table_twists(self):
        """``(Ṽ_c, Ṽ_s)``: what the two tables realise, the passivity observers' measured port twists.

        Ideal robots (Assumption 1): the commands; with ``robot_delay_steps`` the delayed ones. A
        runner with real robots overrides it, together with :meth:`lab_states`.
        """
        if self._tables:
            return self._tables[0][1], self._tables[0][3]
        return self.client.state.twist_client_rel_body, self.servicer.admittance.state.twist_base_rel_body

    def passivity_record(self):
        if self._passivity_out is None:
            return np.zeros(5), np.zeros(5)
        return np.array(self.client_port.out.as_list()), np.array(self._passivity_out.as_list())


class AbsoluteMission(MissionLoop):
    """The absolute reference ("GNCDE"): free-floating servicer (:class:`FreeFloatingServicer`) and client (Eq. 2) in orbit."""

    def __init__(self, scenario: MissionScenario, controller: ObswController | None = None, dt: float | None = None,
                 forced: bool = True):
        super().__init__(scenario, controller, dt, forced)
        c, s = scenario.client, scenario.servicer
        init, g_b0 = initial_states(scenario)
        self.client = AbsoluteRigidBody(c.body, c.twist_client_body_0)
        self.servicer = FreeFloatingServicer(s.urdf, s.ee_frame, g_b0, init.twist_base_body, s.q_arm_0,
                                             np.zeros(self.model.n))

    def lab_states(self):
        return self.onboard_states()

    def lab_state_arrays(self):
        if type(self).lab_states is not AbsoluteMission.lab_states:
            return super().lab_state_arrays()
        sv = self.servicer
        return (self.client.pose_in_orbit_array, self.client.twist_body, sv.pose_base_in_orbit_array, sv.twist_base_body,
                sv.q_arm, sv.dq_arm)

    def onboard_states(self):
        sv = self.servicer
        return (self.client.pose_in_orbit, self.client.twist_body, sv.pose_base_in_orbit, sv.twist_base_body, sv.q_arm,
                sv.dq_arm)

    def onboard_state_arrays(self):
        if type(self).onboard_states is not AbsoluteMission.onboard_states:
            return self.onboard_states()
        sv = self.servicer
        return (self.client.pose_in_orbit_array, self.client.twist_body, sv.pose_base_in_orbit_array, sv.twist_base_body,
                sv.q_arm, sv.dq_arm)

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        self.servicer.step(self.dt, wrench_base_com, tau_arm, wrench_flange)
        self.client.step(wrench_client_com, self.dt)

    def quiet_steps(self, n: int) -> tuple[int, bool]:
        """Up to ``n`` steps of :meth:`advance` and the OBSW's ticks in one call of
        :func:`hil_bringup.runners.mission_kernel.absolute_steps` (the same kernels in the same order;
        ``test_envisat_mission`` requires the same records), on new arrays that the bodies keep after it."""
        sv = self.servicer
        own = all(getattr(type(self), name) is getattr(AbsoluteMission, name)
                  for name in ('advance', 'lab_states', 'lab_state_arrays', 'onboard_states', 'onboard_state_arrays'))
        held = self._held_inputs()
        if not own or held is None or sv._chain is None or self.model.ee_chain is None or not self.dt > 0.0:
            return 0, False
        m, ticks = self._quiet_span(n)
        latched = self.contact.state == LATCHED
        contact = self._quiet_contact(latched)
        client, n = self.client, self.model.n
        g_t, v_t = client.pose_in_orbit_array.copy(), client.twist_body.copy()
        g_b, x = sv.pose_base_in_orbit_array.copy(), np.empty(6 + 2 * n)
        x[:6], x[6:6 + n], x[6 + n:] = sv.twist_base_body, sv.q_arm, sv.dq_arm
        fo = np.zeros(mission_kernel.N_FO)
        fo[mission_kernel.FO_T_CLIENT] = client.t
        done = mission_kernel.absolute_steps(
            m, self.dt, *contact, g_t, v_t, client.body.mass_matrix, client.body.mass_matrix_inv, g_b, x[:6],
            x[6:6 + n], x[6 + n:], *held, sv._pose_flange_in_joint_arr, sv._ee_joint, sv._fext, sv._chain, sv._work,
            sv._work_ic, np.empty((1, 12)), np.empty(6 + 2 * n), fo, self.k, *ticks)
        if not self._quiet_outcome(done, fo):
            return 0, True
        client._pose, client._pose_se3, client.twist_body = g_t, None, v_t
        client.t = float(fo[mission_kernel.FO_T_CLIENT])
        sv._pose, sv._pose_se3 = g_b, None
        sv.twist_base_body, sv.q_arm, sv.dq_arm = x[:6], x[6:6 + n], x[6 + n:]
        self.wrench_tool = contact[-4] if latched else _NO_WRENCH
        self.port_wrench = None
        return done, done < m


def compare_relative_pose(hil: MissionRecord, ref: MissionRecord) -> dict:
    """Max differences of the servicer-client relative pose between two runs (seed 004 Figs. 8-9)."""
    n = min(len(hil.t), len(ref.t))
    dp = np.linalg.norm(hil.pos_base_in_client[:n] - ref.pos_base_in_client[:n], axis=1)
    dr = []
    for a, b in zip(hil.rpy_base_in_client[:n], ref.rpy_base_in_client[:n]):
        ra, rb = pin.rpy.rpyToMatrix(*a), pin.rpy.rpyToMatrix(*b)
        dr.append(np.linalg.norm(pin.log3(ra.T @ rb)))
    return {'max_position_error_m': float(dp.max()), 'max_angle_error_rad': float(np.max(dr)),
            'duration_s': float(hil.t[n - 1])}


def warm_up() -> None:
    """Compile (or load from Numba's cache) ``mission_kernel``'s calls with the argument types the runners pass: a
    few steps of each runner (``./dev`` runs it after any change of the packages)."""
    from hil_bringup.scenario import load_scenario

    from hil_bringup.runners.twin_validation import ArmHold, TwinHilMission, validation_scenario

    scenario = load_scenario('envisat_capture')
    for cls in (HilMission, AbsoluteMission):
        mission = cls(scenario)
        mission.steps(2 * mission.obsw_every)
    validation = validation_scenario(scenario)        # the twin runner's fused step (twin_loop_step)
    twin = TwinHilMission(validation, ArmHold(ServicerModel(validation.servicer.urdf, validation.servicer.ee_frame),
                                              validation.servicer.q_arm_0, 1.0))
    twin.steps(2)
