"""The Envisat capture closed through the lab twin's contact, lockstep (issue 11, items 2-3).

The facility loop of seed 004 Fig. 7 with the MuJoCo lab twin as the lab, calibrated by
:mod:`hil_bringup.facility`, and no software contact (no :class:`GraspContact` in the loop):

* client chain: twin ``client_ft`` -> :class:`~hil_bringup.runners.twin_validation.TwinFtSensor` (tare,
  mock-up weight, dead band) -> :class:`ClientAdmittance` (Eq. 11) -> UR10e
  :class:`MotionTable` commanding the client CoM's pose ``g_c`` in the nominal frame;
* servicer chain: twin ``servicer_wrist_ft`` -> ``TwinFtSensor`` (gripper weight) ->
  :class:`ServicerAdmittance` (Eq. 18) with the arm's *measured* joints -> KR 120
  ``MotionTable`` commanding the servicer base's pose ``g_s`` in the nominal frame; the OBSW
  torques through Eq. (22) (:class:`ArmFeedForward`, without its gravity term: the arm's torque
  mode compensates gravity) -> the twin's torque-controlled arm (with its joint friction and
  the torque interface's friction compensation, :class:`hil_lab_twin.scene.ArmConfig`);
* the example OBSW (:class:`hil_admittance.obsw.ObswController`) reads the Eq. (23) states;
  when it latches the grasp, the twin's gripper closes physically on the ring's lip and
  MuJoCo computes the contact; both F/T sensors read it.

Passivity observers (``hil_dynamics.passivity``; they act with ``passivity_control=True``) at the
client and servicer admittance ports, with the tables' twists measured in the twin, and at the
arm port (the torque the measured arm motion implies in Eq. 12 against the commanded one; its
damping goes to the twin's arm); ``energy_injected_j`` is the simulated spacecraft's kinetic
energy minus the OBSW's work (docs/envisat_capture.md: the loop is passive at its ports, the
post-grasp growth is the grip rotating on the ring's lip).

Hooks for the post-grasp re-basing (another module):
``wrench_hook(mission, wrench_client_com, wrench_flange) -> (wrench_client_com, wrench_flange)``
is applied to the processed wrenches before the admittances, and ``step_hook(mission)`` runs
after every step. Plain Python, no rclpy.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin

from hil_bringup.facility import LabCalibration, calibrate, load_facility, twin_config
from hil_bringup.runners.mission import AbsoluteMission, HilMission, MissionLoop, initial_states
from hil_bringup.runners.twin_validation import (TWIN_GRAVITY_M_S2, RuleStates, TwinFtSensor, pose_wrist_sensor_in_flange,
                                                tare_twin_sensors)
from hil_bringup.scenario import MissionScenario
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.passivity import ClientPort, PassivityController
from hil_dynamics.se3 import transform_wrench
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance
from hil_lab_twin.lockstep import response_delay
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import make_kinematics
from hil_motion_table.table import MotionTable, TableLimits
from hil_common.errors import ConfigError

SEED = {'approach_start_s': 9.1, 'grasp_latch_s': 32.6}     # seed 004 §V


class TwinGripper:
    """The gripper's state as the record reports it (``open``, ``closing``, ``closed``), from the twin."""

    def __init__(self, twin: LabTwin, arm: str, lip_half_m: float):
        self.twin, self.arm, self.lip_half = twin, arm, lip_half_m
        self.commanded = False
        self.closed_at: float | None = None

    @property
    def state(self) -> str:
        if not self.commanded:
            return 'open'
        fingers = self.twin.finger_positions(self.arm)
        if self.closed_at is None and np.all(fingers < self.lip_half + 1e-3) and self.twin.data.ncon > 0:
            self.closed_at = self.twin.time
        return 'closed' if self.closed_at is not None else 'closing'

    def close(self) -> None:
        if not self.commanded:
            self.twin.close_gripper(self.arm)
            self.commanded = True


class TwinCaptureMission(RuleStates, MissionLoop):
    """The Envisat capture with the lab twin in the loop (see the module docstring)."""

    def __init__(self, scenario: MissionScenario, facility=None, controller=None, twin_config_override=None,
                 delay_compensation: bool = True, tare_s: float = 0.2, passivity_control: bool = False,
                 grip_noslip_iterations: int | None = None):
        super().__init__(scenario, controller, None, forced=True)
        c = scenario.client
        self.cal: LabCalibration = calibrate(facility or load_facility('envisat_lab'), scenario)
        init, _ = initial_states(scenario)
        self.twin = LabTwin(twin_config_override or twin_config(self.cal))
        # The grip's no-slip solver comes with the twin's gripper (RingGripperConfig.noslip_iterations,
        # the same in the live twin); a control run may override it (0: MuJoCo's soft friction).
        if grip_noslip_iterations is not None:
            if grip_noslip_iterations < 0:
                raise ConfigError(f'grip_noslip_iterations must be >= 0, got {grip_noslip_iterations!r}')
            self.twin.model.opt.noslip_iterations = int(grip_noslip_iterations)
        self.twin_steps = int(round(self.dt / self.twin.dt))
        if not np.isclose(self.twin_steps * self.twin.dt, self.dt):
            raise ConfigError('the admittance period must be a whole number of twin steps')
        self.client_rule = ClientAdmittance(c.body, c.twist_client_body_0)
        self.servicer_rule = ServicerAdmittance(self.model, c.body, c.twist_client_body_0, None, init.pose_base_in_nominal,
                                                init.twist_base_rel_body)
        # The twin's world is the lab: the nominal frame lies where the calibration says (gravity of Eq. 20).
        self.feedforward = ArmFeedForward(self.model, self.cal.facility.pose_nominal_in_lab, TWIN_GRAVITY_M_S2,
                                          use_gravity=False)
        self.tables = {}
        for ns in ('client', 'servicer'):
            horizon = response_delay(self.twin.servo_config(ns)) if delay_compensation else 0.0
            table = MotionTable(make_kinematics(self.cal.facility.robot_models[ns]), TableLimits((-3.0,) * 3, (3.0,) * 3),
                                period=self.dt, prediction_horizon=horizon)
            table.initialize(self.twin.joint_state(ns).positions)
            self.tables[ns] = table
        # The wrist sensor relative to the arm's flange (URDF EE frame), from the twin at start.
        s = scenario.servicer
        self.pose_wrist_sensor_in_flange = pose_wrist_sensor_in_flange(self.model, self.twin, s.urdf)
        deadband = self.cal.facility.ft_deadband
        self.client_ft = TwinFtSensor(self.twin, 'client_ft', 'client_mockup', deadband)
        self.wrist_ft = TwinFtSensor(self.twin, 'servicer_wrist_ft', 'servicer_arm_gripper', deadband)
        tare_twin_sensors(self.twin, (self.client_ft, self.wrist_ft), tare_s)
        self.contact = TwinGripper(self.twin, 'servicer_arm', 0.5 * self.cal.facility.ring['lip_thickness_m'])
        arm = self.twin.joint_state('servicer_arm')
        self.q_arm, self.dq_arm, self.ddq_arm = arm.positions, arm.velocities, np.zeros(self.model.n)
        # Passivity observers of both admittance ports (hil_dynamics.passivity), with the tables'
        # twists measured in the twin; they act (damping -beta M V) only with passivity_control.
        rate = scenario.passivity.max_rate_per_s if getattr(scenario, 'passivity', None) is not None else 0.0
        self.client_port = ClientPort(self.client_rule, rate, enabled=passivity_control)   # Eq. 11 with its port's observer
        self.passivity_client = self.client_port.controller
        self.passivity_servicer = PassivityController(self.model.mass_matrix(s.q_arm_0)[:6, :6], rate,
                                                      enabled=passivity_control)
        # ... and of the arm port (see advance): the energy the twin's arm gives the simulated servicer
        # beyond the commanded torques, dissipated by a joint damping -beta M_red dq on the twin's arm.
        mass = self.model.mass_matrix(s.q_arm_0)
        m_red = mass[6:, 6:] - mass[6:, :6] @ np.linalg.solve(mass[:6, :6], mass[:6, 6:])
        self.passivity_arm = PassivityController(m_red, rate, enabled=passivity_control)
        self._passivity_out = None
        self._passivity_arm_out = None
        self._arm_port_j = 0.0
        self._tau_pc = np.zeros(self.model.n)
        self._flange_site = {ns: mujoco.mj_name2id(self.twin.model, mujoco.mjtObj.mjOBJ_SITE,
                                                   self.twin.flange_site(ns)) for ns in self.tables}
        # The simulated spacecraft's mechanical energy and the OBSW's work on it: their difference
        # is what the lab (everything between the OBSW and the simulation) injected.
        self.energy_obsw_work_j = 0.0
        self.energy_simulated_0_j = self.simulated_energy()
        self.wrench_hook = None
        self.step_hook = None
        self.lab = {'t': [], 'tool_in_grasp_error': [], 'wrench_client_at_grasp': [], 'wrench_gripper_at_grasp': [],
                    'gripper': [], 'energy_injected_j': [], 'passivity_arm': []}

    # -- MissionLoop interface ----------------------------------------------------------------
    def table_commands(self):
        cs, ss = self.client_rule.state, self.servicer_rule.state
        return ((cs.pose_client_in_nominal * self.pose_grasp_in_client).translation.copy(),
                ss.pose_base_in_nominal.translation.copy())

    def table_poses(self):
        cs, ss = self.client_rule.state, self.servicer_rule.state
        return pin.SE3ToXYZQUAT(cs.pose_client_in_nominal), pin.SE3ToXYZQUAT(ss.pose_base_in_nominal)

    def simulated_tool_in_grasp(self) -> pin.SE3:
        """The tool's pose relative to the grasp frame from the admittances' states (Eq. 23's relative pose)."""
        g_c, _, g_s, v_s, q, dq = self.lab_states()
        pose_tool, _ = self.tool_pose_twist(g_s, v_s, q, dq)
        return (g_c * self.pose_grasp_in_client).actInv(pose_tool)

    def measured_tool_in_grasp(self) -> pin.SE3:
        """The same pose measured in the twin: the gripper's tool site relative to the ring's grasp site."""
        return self.twin.site_pose_in_world('client_grapple').actInv(self.twin.site_pose_in_world('servicer_arm_tool'))

    def wrenches_at_grasp(self):
        """Processed client and wrist F/T wrenches (on the mock-up, on the gripper), moved to the grasp
        frame of the twin (its axes, about its origin): equal and opposite while grasped."""
        grasp = self.twin.site_pose_in_world('client_grapple')
        out = []
        for chain, site in ((self.client_ft, 'client_ft_site'), (self.wrist_ft, 'servicer_wrist_ft_site')):
            pose_sensor_in_grasp = grasp.actInv(self.twin.site_pose_in_world(site))
            out.append(pose_sensor_in_grasp.act(pin.Force(chain.wrench())).vector)
        return out[0], out[1]

    def measured_table_twists(self):
        """``(Ṽ_c, Ṽ_s)``: the body twists the two tables realise in the twin (the flange sites'
        velocities moved to the client CoM and the servicer base through the calibration), in the
        bodies' frames, relative to the nominal frame (fixed in the lab)."""
        out = []
        for ns in ('client', 'servicer'):
            vel = np.zeros(6)
            mujoco.mj_objectVelocity(self.twin.model, self.twin.data, mujoco.mjtObj.mjOBJ_SITE, self._flange_site[ns],
                                     vel, 1)
            twist_flange = pin.Motion(vel[3:], vel[:3])          # MuJoCo: [angular, linear], local frame
            out.append(self.cal.pose_body_in_flange[ns].actInv(twist_flange).vector)
        return out[0], out[1]

    def simulated_energy(self) -> float:
        """Kinetic energy of the simulated client and servicer (Eq. 23 absolute twists) [J]."""
        _, v_t, _, v_b, q, dq = self.onboard_states()
        v = np.concatenate((v_b, dq))
        return 0.5 * float(v_t @ self.client_rule.body.mass_matrix @ v_t) + 0.5 * float(v @ self.model.mass_matrix(q) @ v)

    def energy_injected_j(self) -> float:
        """Energy the lab injected into the simulated spacecraft since the start [J]: the change of
        :meth:`simulated_energy` minus the work of the OBSW's ``F_b`` and ``tau`` (the contact is
        internal; grip damping and friction make it <= 0 for a passive lab)."""
        return self.simulated_energy() - self.energy_simulated_0_j - self.energy_obsw_work_j

    def passivity_record(self):
        if self._passivity_out is None:
            return np.zeros(5), np.zeros(5)
        return tuple(np.array(out.as_list()) for out in self._passivity_out)

    def step(self) -> None:
        if self.k % self.obsw_every == 0 and self.controller is not None:
            self.command = self.controller.update(self.t, *self.onboard_states())
            self.wrench_base_com, self.tau_arm = self.command.wrench_base_com, self.command.tau_arm
            if self.command.close_gripper:
                self.contact.close()
        self.advance(self.wrench_base_com, self.tau_arm, None, None)
        self.k += 1
        self.t = self.k * self.dt
        if self.step_hook is not None:
            self.step_hook(self)

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        # The contact is physical in the twin: the rules read the processed F/T samples.
        w_client = transform_wrench(self.cal.pose_sensor_in_client, self.client_ft.wrench())
        w_flange = transform_wrench(self.pose_wrist_sensor_in_flange, self.wrist_ft.wrench())
        if self.wrench_hook is not None:
            w_client, w_flange = self.wrench_hook(self, w_client, w_flange)
        self.wrench_tool = self.pose_tool_in_flange.actInv(pin.Force(w_flange)).vector   # recorded: on the tool
        # Passivity observers/controllers (seed 004 Eq. 28): commanded against measured twists.
        cs, ss = self.client_rule.state, self.servicer_rule.state
        measured_c, measured_s = self.measured_table_twists()
        jac_b = self.model.ee_jacobian(self.q_arm)[:, :6]
        out_s = self.passivity_servicer.update(measured_s, ss.twist_base_rel_body, jac_b.T @ w_flange, self.dt)
        cs = self.client_port.step(w_client, self.dt, measured_c)
        self._passivity_out = (self.client_port.out, out_s)
        _, v_b0 = ss.absolute()
        dq0 = self.dq_arm
        ss = self.servicer_rule.step(self.dt, self.q_arm, self.dq_arm, self.ddq_arm,
                                     np.asarray(wrench_base_com, dtype=float) + out_s.wrench_pc, w_flange)
        tau_q = self.feedforward.torque_command(tau_arm, self.q_arm, self.dq_arm, ss.pose_arrays()[1],   # Eq. (22)
                                                ss.twist_base_rel_body, ss.twist_nominal_body,
                                                self.servicer_rule.nominal_acceleration(ss.twist_nominal_body))
        bodies = {'client': cs.pose_client_in_nominal, 'servicer': ss.pose_base_in_nominal}
        for ns, table in self.tables.items():
            out = table.step(self.cal.flange_target(ns, bodies[ns]), q_measured=self.twin.joint_state(ns).positions,
                             t=self.twin.time)
            self.twin.command_positions(ns, out.q_command)
        # The arm port: the simulated servicer moved its arm as the twin's arm moved (q, dq, ddq
        # measured); the torque that motion implies in Eq. (12), ``tau_sim``, against the torque
        # commanded (OBSW + passivity damping) is what the lab gave the simulation at the joints.
        q0, ddq0 = self.q_arm, self.ddq_arm
        dv_b = ss.absolute()[1] - v_b0
        mass = self.model.mass_matrix(q0)
        h = self.model.coriolis_force(q0, v_b0, dq0)
        jac_m = self.model.ee_jacobian(q0)[:, 6:]
        tau_sim = mass[6:] @ np.concatenate((dv_b / self.dt, ddq0)) + h[6:] - jac_m.T @ w_flange
        tau_given = np.asarray(tau_arm, dtype=float) + self._tau_pc
        out_a = self.passivity_arm.update(dq0, dq0, np.zeros(self.model.n), self.dt, self._arm_port_j)
        self._arm_port_j = float(dq0 @ (tau_sim - tau_given)) * self.dt
        self._tau_pc = out_a.wrench_pc
        self._passivity_arm_out = out_a
        self.twin.command_efforts('servicer_arm', tau_q + out_a.wrench_pc)
        self.twin.step(self.twin_steps)
        arm = self.twin.joint_state('servicer_arm')
        self.ddq_arm = (arm.velocities - self.dq_arm) / self.dt
        self.q_arm, self.dq_arm = arm.positions, arm.velocities
        _, v_b1 = self.servicer_rule.state.absolute()
        self.energy_obsw_work_j += 0.5 * self.dt * (float(np.asarray(wrench_base_com) @ (v_b0 + v_b1))
                                                    + float(np.asarray(tau_arm) @ (dq0 + self.dq_arm)))

    def record_sample(self) -> None:
        super().record_sample()
        err = self.simulated_tool_in_grasp().actInv(self.measured_tool_in_grasp())
        wc, wg = self.wrenches_at_grasp()
        self.lab['t'].append(self.t)
        self.lab['tool_in_grasp_error'].append([float(np.linalg.norm(err.translation)),
                                                float(np.linalg.norm(pin.log3(err.rotation)))])
        self.lab['wrench_client_at_grasp'].append(wc)
        self.lab['wrench_gripper_at_grasp'].append(wg)
        self.lab['gripper'].append(self.contact.state)
        self.lab['energy_injected_j'].append(self.energy_injected_j())
        self.lab['passivity_arm'].append(self._passivity_arm_out.as_list() if self._passivity_arm_out is not None
                                         else [0.0] * 5)

    def lab_record(self) -> dict:
        return {k: (np.array(v) if k != 'gripper' else list(v)) for k, v in self.lab.items()}

    def faults(self) -> dict:
        return {ns: {k: n for k, n in t.stats.fault_counts.items() if n} for ns, t in self.tables.items()}


# -- the figures of issue 11 item 3 --------------------------------------------------------------------
def capture_figures(rec, controller, after_grasp_s: float = 2.0) -> dict:
    """Approach start, grasp latch, relative velocity after the grasp, peak contact wrench, momentum."""
    times = dict(controller.phase_times)
    t = np.asarray(rec.t)
    out = {'approach_start_s': times.get('approach'), 'grasp_latch_s': times.get('grasp'),
           'post_grasp_s': times.get('post_grasp')}
    rel = np.asarray(rec.twist_base_rel_client)
    mom = np.asarray(rec.momentum_in_orbit)
    wrench = np.asarray(rec.wrench_tool)
    if out['grasp_latch_s'] is not None:
        latch = out['grasp_latch_s']
        before = t < latch
        after = t >= latch + after_grasp_s
        out['relative_speed_after_grasp_m_s'] = float(np.linalg.norm(rel[after, :3], axis=1).max()) if after.any() else None
        out['relative_rate_after_grasp_rad_s'] = float(np.linalg.norm(rel[after, 3:], axis=1).max()) if after.any() else None
        out['momentum_before'] = mom[before][-1].tolist()
        out['momentum_after'] = mom[-1].tolist()
        # Thrusters are off from post_grasp on: the contact is internal, so any change of the summed
        # momentum of the simulated client and servicer is what the loop (the lab) injects.
        post = t >= out['post_grasp_s'] if out['post_grasp_s'] is not None else np.zeros_like(t, dtype=bool)
        if post.any():
            first = mom[post][0]
            out['momentum_change_post_grasp'] = [float(np.linalg.norm(mom[post][-1, :3] - first[:3])),
                                                 float(np.linalg.norm(mom[post][-1, 3:] - first[3:]))]
        contact = t >= latch
        out['peak_contact_force_n'] = float(np.linalg.norm(wrench[contact, :3], axis=1).max())
        out['peak_contact_torque_nm'] = float(np.linalg.norm(wrench[contact, 3:], axis=1).max())
    return out


def plot_passivity(run: dict, path, title: str = 'twin capture: passivity observers') -> 'Path':
    """PNG of a twin run's passivity energies and relative motion (``run``: ``run_side_by_side()['twin']``).

    Rows: the observed energy ``E_obs`` at the client, servicer and arm ports with what each
    controller dissipated; the simulated spacecraft's energy minus the OBSW's work; the relative
    speed and rate of base and client (Eq. 23) with the phase times.
    """
    from hil_bringup import plot_style as ps

    rec, lab = run['record'], run['lab']
    t = np.asarray(rec.t)
    events = {k: run['figures'].get(k) for k in ('approach_start_s', 'grasp_latch_s', 'post_grasp_s')}
    fig, ax = ps.figure(3, 1, title=title)
    ports = (('client port', np.asarray(rec.passivity_client), 'tab:blue'),
             ('servicer port', np.asarray(rec.passivity_servicer), 'tab:orange'),
             ('arm port', np.asarray(lab['passivity_arm']), 'tab:green'))
    for name, values, color in ports:
        ax[0, 0].plot(t, values[:, 0], color=color, lw=1.2, label=f'{name}: observed')
        ax[0, 0].plot(t, values[:, 3], color=color, lw=0.8, ls='--', label=f'{name}: dissipated')
    ps.label(ax[0, 0], 'energy', 'J')
    ax[1, 0].plot(t, lab['energy_injected_j'], label='simulated energy - OBSW work', **ps.UNDER_TEST)
    ps.label(ax[1, 0], 'energy', 'J')
    rel = np.asarray(rec.twist_base_rel_client)
    ax[2, 0].plot(t, 1e3 * np.linalg.norm(rel[:, :3], axis=1), label='relative speed [mm/s]', **ps.UNDER_TEST)
    ax[2, 0].plot(t, 1e3 * np.linalg.norm(rel[:, 3:], axis=1), label='relative rate [mrad/s]', color='tab:red', lw=1.0)
    ps.label(ax[2, 0], 'relative motion', 'mm/s, mrad/s', 't [s]')
    for a in ax[:, 0]:
        ps.mark_events(a, events)
        ps.legend(a)
    return ps.save(fig, path)


def run_side_by_side(scenario: MissionScenario, duration_s: float, facility=None, record_every_s: float = 0.05,
                     ideal: bool = True, absolute: bool = True, progress=None, passivity_control: bool = False) -> dict:
    """The twin capture, and optionally the ideal-robot lockstep and the absolute reference, with their figures."""
    out = {}
    twin = TwinCaptureMission(scenario, facility, passivity_control=passivity_control)
    rec = twin.run(duration_s, record_every_s, progress)
    out['twin'] = {'figures': capture_figures(rec, twin.controller), 'record': rec, 'lab': twin.lab_record(),
                   'faults': twin.faults(), 'mission': twin}
    for name, enabled, cls in (('ideal', ideal, HilMission), ('absolute', absolute, AbsoluteMission)):
        if enabled:
            mission = cls(scenario)
            r = mission.run(duration_s, record_every_s)
            out[name] = {'figures': capture_figures(r, mission.controller), 'record': r}
    out['seed'] = dict(SEED)
    return out
