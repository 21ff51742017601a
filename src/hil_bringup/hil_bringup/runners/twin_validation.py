"""Unforced validation with the lab twin in the loop (seed 004 §V, Figs. 8-9), lockstep.

Seed 004 validated its facility with ``F_b = tau = 0``: the servicer-client relative pose
*measured on the industrial robots* against GNCDE (within 1 mm and 0.002 rad, client at
-1 deg/s). Here the facility is the MuJoCo lab twin with its known imperfections -- the
industrial robots' command transport delay and finite servo bandwidth, F/T noise and bias,
the arm's torque delay -- driven by the same rule objects as the ROS graph, in lockstep
(deterministic, faster than real time), and the reference is :class:`AbsoluteMission`:

* client chain: twin ``client_ft`` -> tare, mock-up weight, dead band (:class:`TwinFtSensor`,
  the driver's :class:`~hil_sensors.processing.WrenchChain`) ->
  :class:`ClientAdmittance` (Eq. 11) -> UR10e :class:`MotionTable` -> twin;
* servicer chain: twin ``servicer_wrist_ft`` -> :class:`TwinFtSensor` (gripper weight) ->
  :class:`ServicerAdmittance` (Eq. 18) with the arm's *measured* joints -> KR 120
  :class:`MotionTable` -> twin; Eq. (22) torques (:class:`ArmFeedForward`) -> the twin's
  torque-controlled arm;
* measured relative pose: both tables' flange poses from the twin, mapped back through the
  tables' calibration to the client CoM and servicer base in the nominal frame, so
  ``g_bt = g_c^-1 g_s`` (the nominal cancels, Eq. 23).

The validation geometry (``unforced_validation`` in the scenario) is the seed's: client at
-1 deg/s; the servicer co-moving near the client's spin axis, so its 60 s unforced drift
(about 0.25 m) fits the robots' 1 m workspace. ``F_b = 0``; the OBSW torque ``tau`` is a
joint hold (the arm's brakes: internal torques, momentum unchanged), in the reference and
in the loop alike, because the free arm's motion under the ~1e-3 N m fictitious torques of a
1 deg/s tumble is far below a real arm's joint friction.

Twin arm: its torque mode compensates gravity (as the LBR iiwa's does), so Eq. (22) is
commanded without its ``-G`` term. Plain Python, no rclpy.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import mujoco
import numpy as np
import pinocchio as pin

from hil_admittance.obsw import ObswCommand
from hil_bringup.runners import mission_kernel
from hil_bringup.runners.mission import (AbsoluteMission, MissionLoop, MissionRecord, compare_relative_pose,
                                        initial_states)
from hil_bringup.scenario import MissionScenario, pose_arm_mount_in_base
from hil_common.errors import ConfigError, SensorFault
from hil_dynamics import kernels
from hil_dynamics.client import ClientAdmittance
from hil_dynamics.se3 import transform_wrench
from hil_dynamics.servicer import ArmFeedForward, ServicerAdmittance, ServicerModel, ServicerState
from hil_lab_twin.lockstep import response_delay
from hil_lab_twin.scene import ArmConfig, FtConfig, TwinConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_lab_twin.twin_loop import TwinLoop
from hil_motion_table.kinematics_helpers import FlangeTarget, make_kinematics
from hil_motion_table.table import MotionTable, TableLimits
from hil_motion_table.table_loop import TableLoopState
from hil_sensors.processing import ToolGravity, WrenchChain

TWIN_GRAVITY_M_S2 = 9.81          # the twin's MJCF gravity
_ZEROS_6 = np.zeros(6)            # the tables' feed-forward twist: none (never written)
VALIDATION_FT_BIAS = (1.5, -0.8, 2.0, 0.05, -0.03, 0.02)   # sensor offsets [N, N m]
CLIENT_ROBOT, SERVICER_ROBOT = 'ur10e', 'kr120r2500pro'     # as in facility_config


@dataclass
class UnforcedValidation:
    """The ``unforced_validation`` section of a mission scenario."""

    twist_client_body_0: np.ndarray
    pose_base_in_client_0: pin.SE3
    duration_s: float
    arm_hold_bandwidth_rad_s: float
    ft_deadband: np.ndarray           # [N x3, N m x3]
    tare_s: float


def validation_scenario(scenario: MissionScenario) -> MissionScenario:
    """A copy of ``scenario`` with the client tumble and servicer start of its validation section."""
    v = scenario.unforced_validation
    if v is None:
        raise ConfigError(f'scenario {scenario.name!r} has no unforced_validation section')
    out = copy.deepcopy(scenario)
    out.client.twist_client_body_0 = np.array(v.twist_client_body_0, dtype=float)
    out.servicer.pose_base_in_client_0 = v.pose_base_in_client_0
    return out


def validation_twin_config(scenario: MissionScenario) -> TwinConfig:
    """The facility of the validation: UR10e client table, KR 120 with the arm; the default servo
    delay and lag and F/T noise, plus a sensor offset on every F/T sensor (which the tare removes)."""
    robots = tuple(dataclasses.replace(r, ft=FtConfig(bias=VALIDATION_FT_BIAS, seed=11 + i))
                   for i, r in enumerate(facility_config('serial', with_servicer=True).robots))
    arm = ArmConfig(q_initial=tuple(float(x) for x in scenario.servicer.q_arm_0),
                    wrist_ft=FtConfig(bias=VALIDATION_FT_BIAS, seed=7))
    return TwinConfig(robots=robots, arm=arm)


class ArmHold:
    """``F_b = 0`` and a joint hold ``tau = -M_red (w^2 (q - q_0) + 2 w dq)`` (the arm's brakes).

    ``M_red = M_q - M_bq^T M_b^-1 M_bq`` is the arm inertia on its free base (Eq. 12 blocks),
    so ``w`` [rad/s] is the hold's bandwidth on every joint. Same interface as the OBSW rule; it reads no
    pose, so the runners may pass the states as arrays (``takes_pose_arrays``). :meth:`update` is one
    compiled call (:func:`hil_dynamics.kernels.arm_hold_torque`) for a free-flyer chain and joint vectors
    of ``n`` floats, else :meth:`update_reference`.
    """

    takes_pose_arrays = True

    def __init__(self, model: ServicerModel, q_hold, bandwidth_rad_s: float):
        self.model, self.q_hold, self.w = model, np.asarray(q_hold, dtype=float), float(bandwidth_rad_s)
        self._chain = kernels.Chain.of(model.model)
        self._q_hold = np.ascontiguousarray(self.q_hold, dtype=float)
        if self._chain is not None:
            self._m = np.empty((model.model.nv, model.model.nv))
            self.update(0.0, None, None, None, None, self._q_hold, np.zeros(model.n))   # loaded now, not mid-run

    def update(self, t, pose_client_in_orbit, twist_client_body, pose_base_in_orbit, twist_base_body, q_arm, dq_arm):
        c, n = self._chain, self.model.n
        if c is None or not all(type(a) is np.ndarray and a.dtype == np.float64 and a.shape == (n,)
                                and a.flags.c_contiguous for a in (q_arm, dq_arm)):
            return self.update_reference(t, pose_client_in_orbit, twist_client_body, pose_base_in_orbit,
                                         twist_base_body, q_arm, dq_arm)
        tau = np.empty(n)
        kernels.arm_hold_torque(*c.args(), q_arm, dq_arm, self._q_hold, self.w, c.work, c.work_ic, self._m, tau)
        return self._command(tau)

    def update_reference(self, t, pose_client_in_orbit, twist_client_body, pose_base_in_orbit, twist_base_body, q_arm,
                         dq_arm):
        """:meth:`update` with Pinocchio's mass matrix and NumPy's solve (the readable form)."""
        mass = self.model.mass_matrix(q_arm)
        m_red = mass[6:, 6:] - mass[6:, :6] @ np.linalg.solve(mass[:6, :6], mass[:6, 6:])
        tau = -m_red @ (self.w ** 2 * (np.asarray(q_arm) - self.q_hold) + 2.0 * self.w * np.asarray(dq_arm))
        return self._command(tau)

    @staticmethod
    def _command(tau) -> ObswCommand:
        """No base wrench, the joints' ``tau``, the gripper open, no OBSW errors."""
        nan = np.full(6, np.nan)
        return ObswCommand('unforced', np.zeros(6), tau, False, nan, nan)


class TwinFtSensor:
    """A twin F/T sensor read through the driver's :class:`hil_sensors.processing.WrenchChain`
    (tare of the sensor offset, compensation of the carried tool's weight, dead band).

    ``tool_body`` is the twin body hanging from the sensor (mass and CoM read from the
    model, as a lab identifies them); the sensor's orientation comes from the robot's
    forward kinematics (here the twin's site pose, which is exact FK).
    """

    def __init__(self, twin: LabTwin, sensor: str, tool_body: str, deadband):
        self.twin, self.sensor = twin, sensor
        self.read = twin.wrench_source(sensor)
        body = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_BODY, tool_body)
        pose = twin.site_pose_in_world(f'{sensor}_site')
        com_in_sensor = pose.actInv(np.array(twin.data.subtree_com[body]))
        gravity = ToolGravity(float(twin.model.body_subtreemass[body]), com_in_sensor,
                              gravity=(0.0, 0.0, -TWIN_GRAVITY_M_S2))
        self.chain = WrenchChain(gravity, deadband=deadband)
        # the site's rotation is read at every sample: its MuJoCo id looked up once
        self.site_id = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_SITE, f'{sensor}_site')

    def wrench(self) -> np.ndarray:
        """``wrench_sensor_in_sensor`` exerted by the environment on the tool (sign of the driver);
        while a tare collects, the sample also goes into it."""
        return self.wrench_of(self.read()[0])

    def wrench_of(self, raw: np.ndarray) -> np.ndarray:
        """:meth:`wrench` of the sensor's latest reading ``raw`` (a runner stepping the twin in a
        :class:`~hil_lab_twin.twin_loop.TwinLoop` has the readings there)."""
        self.chain.gravity.set_sensor_rotation(self.twin.data.site_xmat[self.site_id].reshape(3, 3))
        # the chain works on Python floats: the sample as a list (the same values; NumPy scalars cost more)
        out = self.chain.process(raw.tolist())
        if out is None:
            raise SensorFault(f'twin sensor {self.sensor!r}: non-finite wrench')
        return np.asarray(out)


def pose_wrist_sensor_in_flange(model: ServicerModel, twin: LabTwin, urdf: str) -> pin.SE3:
    """The twin's wrist F/T sensor relative to the arm's flange (the URDF EE frame), from the twin's
    joint angles and poses at the time of the call."""
    pose_flange_in_base, _ = model.frame_pose_and_jacobian(twin.joint_state('servicer_arm').positions)
    pose_flange_in_arm_base = pose_arm_mount_in_base(urdf).actInv(pose_flange_in_base)
    return pose_flange_in_arm_base.actInv(
        twin.body_pose_in_world('servicer_arm_base').actInv(twin.site_pose_in_world('servicer_wrist_ft_site')))


def tare_twin_sensors(twin: LabTwin, sensors, seconds: float) -> None:
    """Hold the robots still and tare the sensors over ``seconds`` of twin time (the driver's
    tare, before a run starts)."""
    n = max(1, int(round(seconds / twin.dt)))
    for sensor in sensors:
        sensor.chain.tare.start(n)
    for _ in range(n):
        twin.step()
        for sensor in sensors:
            sensor.wrench()


class RuleStates:
    """``lab_states``/``onboard_states`` of a :class:`MissionLoop` whose admittances are the rule objects
    ``client_rule`` and ``servicer_rule`` (the twin runners), the arm's ``q_arm``, ``dq_arm`` measured."""

    def lab_states(self):
        cs, ss = self.client_rule.state, self.servicer_rule.state
        return (cs.pose_client_in_nominal, cs.twist_client_rel_body, ss.pose_base_in_nominal, ss.twist_base_rel_body,
                self.q_arm, self.dq_arm)

    def onboard_states(self):
        g_t, v_t = self.client_rule.state.absolute()
        g_b, v_b = self.servicer_rule.state.absolute()
        return g_t, v_t, g_b, v_b, self.q_arm, self.dq_arm

    def onboard_state_arrays(self):
        """:meth:`onboard_states` with the poses as 12-arrays (Eq. 23 on arrays, no ``pin.SE3``)."""
        g_t, v_t = self.client_rule.state.absolute_arrays()
        g_b, v_b = self.servicer_rule.state.absolute_arrays()
        return g_t, v_t, g_b, v_b, self.q_arm, self.dq_arm


class TwinHilMission(RuleStates, MissionLoop):
    """The unforced HIL loop closed through the lab twin (see the module docstring)."""

    def __init__(self, scenario: MissionScenario, controller=None, twin_config: TwinConfig | None = None,
                 delay_compensation: bool = True, compiled_twin: bool = True):
        super().__init__(scenario, controller, None, forced=controller is not None)
        c, s, v = scenario.client, scenario.servicer, scenario.unforced_validation
        init, _ = initial_states(scenario)
        self.twin = LabTwin(twin_config or validation_twin_config(scenario))
        if not np.isclose(self.twin.dt * round(self.dt / self.twin.dt), self.dt):
            raise ConfigError('the admittance period must be a whole number of twin steps')
        self.twin_steps = int(round(self.dt / self.twin.dt))
        self.client_rule = ClientAdmittance(c.body, c.twist_client_body_0)
        self.servicer_rule = ServicerAdmittance(self.model, c.body, c.twist_client_body_0, None, init.pose_base_in_nominal,
                                                init.twist_base_rel_body)
        self.pose_base_in_nominal_0 = init.pose_base_in_nominal
        # Calibration: the bodies realised on the flanges (the client CoM behind its F/T sensor; the
        # servicer base behind the arm's base, which sits on the servicer F/T sensor).
        self.body_in_flange = {'client': c.pose_sensor_in_client.inverse()}
        flange_world = self.twin.flange_pose_in_world('servicer')
        pose_arm_base_in_flange = flange_world.actInv(self.twin.body_pose_in_world('servicer_arm_base'))
        self.body_in_flange['servicer'] = pose_arm_base_in_flange * pose_arm_mount_in_base(s.urdf).inverse()
        self.pose_wrist_sensor_in_flange = pose_wrist_sensor_in_flange(self.model, self.twin, s.urdf)
        self.home = {ns: self.twin.flange_pose(ns) for ns in ('client', 'servicer')}
        # flange_target_from_body_motion(home, Y, g) of each table, its constant factors made once
        self.flange_target = {ns: FlangeTarget(self.home[ns], self.body_in_flange[ns]) for ns in self.home}
        # The twin's world is the lab: where the nominal frame lies (for the gravity of Eq. 20).
        base_world = self.twin.base_pose('servicer')
        pose_base_in_lab_0 = base_world * self.home['servicer'] * self.body_in_flange['servicer']
        self.feedforward = ArmFeedForward(self.model, pose_base_in_lab_0 * self.pose_base_in_nominal_0.inverse(),
                                          TWIN_GRAVITY_M_S2, use_gravity=False)
        self.tables = {}
        for ns, robot in (('client', CLIENT_ROBOT), ('servicer', SERVICER_ROBOT)):
            horizon = response_delay(self.twin.servo_config(ns)) if delay_compensation else 0.0
            table = MotionTable(make_kinematics(robot), TableLimits((-3.0,) * 3, (3.0,) * 3), period=self.dt,
                                prediction_horizon=horizon)
            table.initialize(self.twin.joint_state(ns).positions)
            self.tables[ns] = table
        self.client_ft = TwinFtSensor(self.twin, 'client_ft', 'client_mockup', v.ft_deadband)
        self.wrist_ft = TwinFtSensor(self.twin, 'servicer_wrist_ft', 'servicer_arm_gripper', v.ft_deadband)
        tare_twin_sensors(self.twin, (self.client_ft, self.wrist_ft), v.tare_s)
        arm = self.twin.joint_state('servicer_arm')
        self.q_arm, self.dq_arm, self.ddq_arm = arm.positions, arm.velocities, np.zeros(self.model.n)
        # the twin's step in compiled calls (TwinLoop, entered at the first step; False: LabTwin.step)
        self.twin_loop = TwinLoop(self.twin) if compiled_twin else None
        self.fused_steps = 0             # steps whose chains, rules and tables ran in one call (twin_loop_step)
        if self.twin_loop is not None:
            loop = self.twin_loop
            self._loop_targets = tuple(loop.target(ns) for ns in ('client', 'servicer', 'servicer_arm'))
            sensors = self.twin.ft_sensor_names
            self._loop_channels = (sensors.index('client_ft'), sensors.index('servicer_wrist_ft'))
        self.measured = {'pos_base_in_client': [], 'rpy_base_in_client': []}

    # -- MissionLoop interface ----------------------------------------------------------------
    def measured_bodies(self) -> tuple[pin.SE3, pin.SE3]:
        """``(g_c, g_s)`` measured on the robots: the flange poses mapped back through the calibration."""
        out = []
        for ns, start in (('client', pin.SE3.Identity()), ('servicer', self.pose_base_in_nominal_0)):
            y = self.body_in_flange[ns]
            out.append(start * y.inverse() * self.home[ns].actInv(self.twin.flange_pose(ns)) * y)
        return out[0], out[1]

    def rules_reference(self, w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm):
        """The rules of a step with their own methods: the processed F/T samples moved to the client's CoM and to
        the flange, the client's Eq. (11) and the servicer's Eq. (18) steps, Eq. (22)'s ``tau_q``. Returns the two
        states and ``tau_q``."""
        w_client = transform_wrench(self.scenario.client.pose_sensor_in_client, w_client_sensor)
        w_wrist = transform_wrench(self.pose_wrist_sensor_in_flange, w_wrist_sensor)    # EE (flange) frame
        cs = self.client_rule.step(w_client, self.dt)
        ss = self.servicer_rule.step(self.dt, self.q_arm, self.dq_arm, self.ddq_arm, wrench_base_com, w_wrist)
        tau_q = self.feedforward.torque_command(tau_arm, self.q_arm, self.dq_arm, ss.pose_arrays()[1],   # Eq. (22)
                                                ss.twist_base_rel_body, ss.twist_nominal_body,
                                                self.servicer_rule.nominal_acceleration(ss.twist_nominal_body))
        return cs, ss, tau_q

    def rules(self, w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm):
        """:meth:`rules_reference` in one compiled call (:func:`hil_bringup.runners.mission_kernel.twin_rules_step`;
        ``test_twin_validation`` holds the two to 1e-12) for the rules' compiled forms and float64 vectors; else, or
        for an input that is not finite (which the rules' methods name), :meth:`rules_reference`."""
        call = self._rules_call(w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm)
        if call is None or not mission_kernel.twin_rules_step(*call[0]):
            return self.rules_reference(w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm)
        return self._rules_done(call)

    def _rules_call(self, w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm):
        """``(twin_rules_step's arguments, the client's arrays, poses, x, tau_q)``: the compiled call of
        :meth:`rules` on these inputs, its outputs' arrays; None where :meth:`rules_reference` runs instead."""
        work = self.__dict__.get('_rules_work')
        if work is None:
            work = self._rules_work = self._rules_setup()
        n = self.model.n
        vectors = (w_client_sensor, w_wrist_sensor, wrench_base_com, tau_arm, self.q_arm, self.dq_arm, self.ddq_arm)
        if work is False or self.feedforward.use_ff2 != self.feedforward.use_ff3 or not all(
                type(v) is np.ndarray and v.dtype == np.float64 and v.flags.c_contiguous for v in vectors) \
                or not (w_client_sensor.shape == w_wrist_sensor.shape == wrench_base_com.shape == (6,)
                        and tau_arm.shape == self.q_arm.shape == self.dq_arm.shape == self.ddq_arm.shape == (n,)):
            return None
        fused, command = work
        client_arrays, constants = self.client_rule.step_arrays()
        ss = self.servicer_rule.state
        g_n, g_s = ss.pose_arrays()
        poses, x, tau_q = np.empty((2, 12)), np.empty(12), np.empty(n)
        args = (self.dt, self._sensor_in_client, w_client_sensor, self._wrist_in_flange, w_wrist_sensor, np.empty(6),
                np.empty(6), *client_arrays, *constants, g_n, ss.twist_nominal_body, g_s, ss.twist_base_rel_body,
                self.q_arm, self.dq_arm, self.ddq_arm, wrench_base_com, fused.ee_joint, fused.placement, fused.fext,
                fused.zero_fext, fused.chain, *self.servicer_rule.nominal_matrices(), fused.work, fused.work_ic, poses,
                x, tau_arm, command.chain, command.lab_gravity, command.nominal_in_lab,
                *self.feedforward.kernel_weights(), command.work, command.work_ic, command.tw, np.empty(6), tau_q)
        return args, client_arrays, poses, x, tau_q

    def _rules_done(self, call):
        """The rules' new states (kept) and ``tau_q`` after ``twin_rules_step`` ran on :meth:`_rules_call`'s ``call``."""
        _, client_arrays, poses, x, tau_q = call
        cs = self.client_rule.finish_step(self.dt, client_arrays)
        ss = self.servicer_rule.state = ServicerState.of_arrays(self.servicer_rule.state.t + self.dt, poses[0], x[:6],
                                                                poses[1], x[6:])
        return cs, ss, tau_q

    def table_command_reference(self, ns: str, state, q_measured, t: float) -> np.ndarray:
        """The joint command of table ``ns`` for the admittance state ``state`` (its body relative to its start,
        :class:`FlangeTarget`), by the table's own ``step``."""
        body = (state.pose_client_in_nominal if ns == 'client'
                else self.pose_base_in_nominal_0.actInv(state.pose_base_in_nominal))
        return self.tables[ns].step(self.flange_target[ns](body), q_measured=q_measured, t=t).q_command

    def table_command(self, ns: str, state, q_measured, t: float) -> np.ndarray:
        """:meth:`table_command_reference` in one compiled call
        (:func:`hil_bringup.runners.mission_kernel.twin_table_step`) on the table's command state kept in a
        :class:`~hil_motion_table.table_loop.TableLoopState` between the calls (put back into the table by
        :meth:`tables_left`); a command the compiled call refuses (a fault, a bad pose) is the table's own step,
        which holds and counts it."""
        loops = self.__dict__.get('_table_loops')
        if loops is None:
            loops = self._table_loops = self._table_loops_setup()
        loop = loops.get(ns)
        table = self.tables[ns]
        if loop is None or table.latched_faults or not (type(q_measured) is np.ndarray and q_measured.shape
                                                          == loop[1].shape and q_measured.dtype == np.float64):
            self.tables_left()
            return self.table_command_reference(ns, state, q_measured, t)
        loop_state, seed, args, start, home_y, y_inv, cmd = loop
        if not self._tables_entered:
            for entered, *_ in loops.values():
                entered.enter()
            self._tables_entered = True
        seed[:] = q_measured
        if mission_kernel.twin_table_step(state.pose_arrays()[1], start, home_y, y_inv, cmd, _ZEROS_6, float(t), args):
            return loop_state.q_cmd.copy()
        self.tables_left()
        return self.table_command_reference(ns, state, q_measured, t)

    def tables_left(self) -> None:
        """The tables' command states back from their loop states (their stats counted), if they were entered."""
        if self.__dict__.get('_tables_entered'):
            for loop_state, *_ in self._table_loops.values():
                loop_state.leave()
            self._tables_entered = False

    def _table_loops_setup(self) -> dict:
        """Each serial table's loop state and ``twin_table_step``'s arrays: ``(state, IK seed, its args, the body's
        start pose, home Y, Y^-1, the command's array)``."""
        loops = {}
        self._tables_entered = False
        for ns, table in self.tables.items():
            try:
                loop_state = TableLoopState(table)
            except ConfigError:          # not a serial chain: its own step
                continue
            seed = table._q_cmd.copy()
            start = pin.SE3.Identity() if ns == 'client' else self.pose_base_in_nominal_0
            target = self.flange_target[ns]
            loops[ns] = (loop_state, seed, loop_state.args(seed), kernels.pose_array(start),
                         kernels.pose_array(target.pose_body_home_in_base), kernels.pose_array(target.pose_flange_in_body),
                         np.empty(12))
        return loops

    def _rules_setup(self):
        """The compiled forms :meth:`rules` calls (``(servicer step's, Eq. 22's)`` work arrays), or False."""
        fused = self.servicer_rule.__dict__.get('_fused') or self.servicer_rule._fused_setup()
        self.servicer_rule._fused = fused
        command = self.feedforward.__dict__.get('_command') or self.feedforward._command_setup()
        self.feedforward._command = command
        if fused.chain is None or command is False or not hasattr(self.client_rule, 'step_arrays'):
            return False
        self._sensor_in_client = kernels.pose_array(self.scenario.client.pose_sensor_in_client)
        self._wrist_in_flange = kernels.pose_array(self.pose_wrist_sensor_in_flange)
        return fused, command

    def advance(self, wrench_base_com, tau_arm, wrench_flange, wrench_client_com) -> None:
        # The contact is physical in the twin: the rules read the processed F/T samples instead.
        loop = self._entered_twin_loop()
        if loop is not None:
            self._advance_in_loop(loop, wrench_base_com, tau_arm)
            return
        cs, ss, tau_q = self.rules(self.client_ft.wrench(), self.wrist_ft.wrench(), wrench_base_com, tau_arm)
        twin, t = self.twin, self.twin.time
        for ns, state in (('client', cs), ('servicer', ss)):
            twin.command_positions(ns, self.table_command(ns, state, twin.joint_positions(ns), t))
        self.twin.command_efforts('servicer_arm', tau_q)
        self.twin.step(self.twin_steps)
        self._arm_measured()

    def _advance_in_loop(self, loop: TwinLoop, wrench_base_com, tau_arm) -> None:
        """:meth:`advance` with the twin stepped by its :class:`~hil_lab_twin.twin_loop.TwinLoop` (the same
        commands, readings and steps, ``test_twin_validation``): the F/T chains, the rules and the tables in one
        compiled call (:func:`hil_bringup.runners.mission_kernel.twin_loop_step`) where they all have their compiled
        forms, else in their own calls; a table that refuses its command in that call runs :meth:`table_command`."""
        fused = self._fused_loop_call(loop, wrench_base_com, tau_arm)
        if fused is not None:
            rules_call, chains, tables, q_index = fused
            t = self.twin.time
            flags = mission_kernel.twin_loop_step(
                loop.wrench, chains[0], chains[1], rules_call[0], rules_call[0][2], rules_call[0][4],
                rules_call[1][2], rules_call[2][1], rules_call[4], tables[0], tables[1], t, self.twin.data.qpos,
                q_index[0], q_index[1], loop.pending, loop.has_pending, self._loop_targets_array, self.twin.dt,
                loop.pre_args)
            if not flags & mission_kernel.LOOP_RULES_REFUSED:
                self.fused_steps += 1
                self._chain_steps += 1
                self._chain_last_compiled = True
                cs, ss, _ = self._rules_done(rules_call)
                self._finish_fused_step(loop, flags, cs, ss, t)
                return
        self._chain_last_compiled = False
        client, wrist = self._loop_channels
        cs, ss, tau_q = self.rules(self.client_ft.wrench_of(loop.wrench[client]),
                                   self.wrist_ft.wrench_of(loop.wrench[wrist]), wrench_base_com, tau_arm)
        twin, t = self.twin, self.twin.time
        k_client, k_servicer, k_arm = self._loop_targets
        loop.command(k_client, self.table_command('client', cs, twin.joint_positions('client'), t))
        loop.command(k_servicer, self.table_command('servicer', ss, twin.joint_positions('servicer'), t))
        loop.command(k_arm, tau_q)
        self._loop_steps(loop, self.twin_steps)

    def _finish_fused_step(self, loop: TwinLoop, flags: int, cs, ss, t: float) -> None:
        """The step from time ``t`` after ``twin_loop_step`` returned ``flags`` (not ``LOOP_RULES_REFUSED``), the
        rules' new states ``cs``, ``ss``: a refused table's command by :meth:`table_command`, then the twin's steps
        and the arm's measured joints."""
        for ns, state, refused, k in (('client', cs, mission_kernel.LOOP_CLIENT_TABLE_REFUSED, 0),
                                      ('servicer', ss, mission_kernel.LOOP_SERVICER_TABLE_REFUSED, 1)):
            if flags & refused:
                loop.command(self._loop_targets[k], self.table_command(ns, state, self.twin.joint_positions(ns), t))
        if flags == 0:                    # the first twin step's pre-step is done
            loop.finish_step()
            self._loop_steps(loop, self.twin_steps - 1)
        elif flags & mission_kernel.LOOP_TWIN_REFUSED:
            loop.step_refused()
            self.twin.step(self.twin_steps - 1)
            self._arm_measured()
        else:
            self._loop_steps(loop, self.twin_steps)

    def quiet_steps(self, n: int) -> tuple[int, bool]:
        """:meth:`MissionLoop.quiet_steps`: up to ``n`` steps, to the OBSW's next tick, in one compiled call
        (:func:`hil_bringup.runners.mission_kernel.twin_quiet_steps`: per step what :meth:`advance` does with the
        fused call, ``mj_step`` and the F/T samples inside), on the rules' states copied into arrays the call steps in
        place and handed back after it. None (``(0, False)``) without the twin's loop and the fused call's compiled
        forms, or with more than one twin step per step; a step the call refuses part-way is finished here as
        :meth:`advance` finishes it; one whose inputs the rules refuse is left to the Python step, which names
        them."""
        loop = self._entered_twin_loop()
        held = self._held_inputs()
        if loop is None or self.twin_steps != 1 or held is None:
            return 0, False
        m = n if self.controller is None else min(n, self.obsw_every - self.k % self.obsw_every)
        ss0 = self.servicer_rule.state
        g_n, g_s = ss0.pose_arrays()
        servicer = (g_n.copy(), np.array(ss0.twist_nominal_body, dtype=float), g_s.copy(),
                    np.array(ss0.twist_base_rel_body, dtype=float))
        self.servicer_rule.state = ServicerState.of_arrays(ss0.t, *servicer)      # what the call steps in place
        self.q_arm, self.dq_arm, self.ddq_arm = (np.array(a, dtype=float) for a in (self.q_arm, self.dq_arm,
                                                                                       self.ddq_arm))
        fused = self._fused_loop_call(loop, *held)
        if fused is None:
            self.servicer_rule.state = ss0
            return 0, False
        (args, client_arrays, poses, x, tau_q), chains, tables, q_index = fused
        out, twin, dt = self._quiet_out, self.twin, self.dt
        t0 = twin.time
        done = mission_kernel.twin_quiet_steps(
            m, t0, twin.dt, loop.wrench, chains[0], chains[1], args, args[2], args[4], client_arrays[2], poses, x,
            tau_q, servicer, self.q_arm, self.dq_arm, self.ddq_arm, tables[0], tables[1], twin.data.qpos,
            twin.data.qvel, q_index[0], q_index[1], self._arm_index[0], self._arm_index[1], loop.pending,
            loop.has_pending, self._loop_targets_array, loop.pre_args, loop.mj, loop.post_args, out)
        flags = int(out[0])
        twin.steps += done
        self.fused_steps += done
        self._chain_steps += done
        self._chain_last_compiled = True
        if out[1]:
            loop.draw_used_up()
        rules_done = done + (1 if flags and not flags & mission_kernel.LOOP_RULES_REFUSED else 0)
        t_c, t_s = self.client_rule.state.t, ss0.t
        for _ in range(rules_done):           # the states' times as the steps add them
            t_c, t_s = t_c + dt, t_s + dt
        cs = self.client_rule.adopt(t_c, client_arrays) if rules_done else self.client_rule.state
        if rules_done > done:                 # step `done` stopped after its rules: its new servicer state, then the rest
            self.fused_steps += 1
            self._chain_steps += 1
            ss = self.servicer_rule.state = ServicerState.of_arrays(t_s, poses[0], x[:6], poses[1], x[6:])
            self._finish_fused_step(loop, flags, cs, ss, twin.time)
            return done + 1, False
        self.servicer_rule.state = ServicerState.of_arrays(t_s, *servicer)
        return done, bool(flags)

    def _loop_steps(self, loop: TwinLoop, n: int) -> None:
        """``n`` twin steps by its loop, then the arm's measured joints."""
        for i in range(n):
            if not loop.step():          # a ring full (the loop has left and the twin stepped itself)
                self.twin.step(n - 1 - i)
                break
        self._arm_measured()

    def _fused_loop_call(self, loop: TwinLoop, wrench_base_com, tau_arm):
        """``(rules call, chains, tables, joint indices)`` of ``twin_loop_step``, or None where its parts are not all
        compiled: a chain with a filter, no tool weight or dead band, or a tare collecting; a table without its loop
        state, or with a latched fault."""
        setup = self.__dict__.get('_loop_setup')
        if setup is None:
            setup = self._loop_setup = self._fused_loop_setup(loop)
        sensors = (self.client_ft, self.wrist_ft)
        if setup is False or any(sensor.chain.tare.collecting for sensor in sensors):
            return None
        if any(sensor.chain.tare.count != tares for sensor, tares in zip(sensors, setup[3])):
            self._chains_left()                  # a new tare: its offset into the chains' arguments
            setup = self._loop_setup = self._fused_loop_setup(loop)
            if setup is False:
                return None
        rules_call = self._rules_call(np.empty(6), np.empty(6), wrench_base_com, tau_arm)
        loops = self.__dict__.get('_table_loops')
        if loops is None:
            loops = self._table_loops = self._table_loops_setup()
        if rules_call is None or set(loops) != {'client', 'servicer'} or any(t.latched_faults
                                                                             for t in self.tables.values()):
            return None
        if not self._tables_entered:
            for entered, *_ in loops.values():
                entered.enter()
            self._tables_entered = True
        return rules_call, setup[0], setup[1], setup[2]

    def _fused_loop_setup(self, loop: TwinLoop):
        """The chains' and tables' arguments of ``twin_loop_step`` (made once; the chains' again after a new tare),
        and the tare counts they hold; False if a chain has a step with no compiled form, or a subclass has its own
        ``rules``, ``table_command`` or ``advance`` (which the compiled calls would pass by)."""
        cls = type(self)
        if (cls.rules, cls.table_command, cls.advance) != (TwinHilMission.rules, TwinHilMission.table_command,
                                                           TwinHilMission.advance):
            return False
        chains = []
        for sensor, channel in zip((self.client_ft, self.wrist_ft), self._loop_channels):
            chain = sensor.chain
            if chain.filter is not None or chain.gravity is None or chain.deadband is None:
                return False
            tare = chain.tare
            offset = np.array(tare.offset if chain.tare_enabled and tare.active else [0.0] * 6, dtype=float)
            g = chain.gravity
            chains.append((channel, self.twin.data.site_xmat, sensor.site_id, g.mass_kg, np.array(g.gravity, dtype=float),
                           np.array(g.com, dtype=float), offset, np.array(chain.deadband, dtype=float), np.empty(6)))
        loops = self.__dict__.get('_table_loops')
        if loops is None:
            loops = self._table_loops = self._table_loops_setup()
        if set(loops) != {'client', 'servicer'}:
            return False
        tables = []
        for ns in ('client', 'servicer'):
            loop_state, seed, args, start, home_y, y_inv, cmd = loops[ns]
            tables.append((start, home_y, y_inv, cmd, _ZEROS_6, args))
        q_index = tuple((loop.qpos_i[k, :loop.n[k]].copy(), loop.q_offset[k, :loop.n[k]].copy())
                        for k in self._loop_targets[:2])
        self._loop_targets_array = np.array(self._loop_targets, dtype=np.int64)
        arm = self.twin._arms['servicer_arm']
        self._arm_index = (np.asarray(arm.qpos_adr, dtype=np.int64), np.asarray(arm.dof_adr, dtype=np.int64))
        self._quiet_out = np.zeros(2, dtype=np.int64)
        self._chain_steps = 0
        return tuple(chains), tuple(tables), q_index, tuple(s.chain.tare.count for s in (self.client_ft, self.wrist_ft))

    def _entered_twin_loop(self) -> TwinLoop | None:
        """The twin's loop, entered now if it was not; None if there is none or it cannot step the twin's state."""
        loop = self.twin_loop
        if loop is None or loop.entered:
            return loop
        if loop.supports():
            return None
        loop.enter()
        return loop

    def twin_left(self) -> None:
        """The twin's step state back in its objects (:meth:`TwinLoop.leave`), if its loop was entered, and the
        chains' tool weight as their compiled form left it (:meth:`_chains_left`)."""
        if self.twin_loop is not None:
            self.twin_loop.leave()
        self._chains_left()

    def _chains_left(self) -> None:
        """Each chain's ``ToolGravity`` as ``set_sensor_rotation`` would have left it after the compiled chains'
        steps since the last call: its last weight and its update count."""
        steps = self.__dict__.get('_chain_steps', 0)
        if not steps:
            return
        self._chain_steps = 0
        for sensor, chain_args in zip((self.client_ft, self.wrist_ft), self._loop_setup[0]):
            gravity = sensor.chain.gravity
            if self._chain_last_compiled:
                gravity.wrench, gravity.has_orientation = tuple(chain_args[8].tolist()), True
            gravity.updates += steps

    def run(self, duration_s: float, record_every_s: float = 0.05, progress=None) -> MissionRecord:
        try:
            return super().run(duration_s, record_every_s, progress)
        finally:
            self.twin_left()

    def _arm_measured(self) -> None:
        """The arm's measured joints after a step, and their finite-differenced acceleration."""
        q_arm, dq_arm = self.twin.joint_positions('servicer_arm'), self.twin.joint_velocities('servicer_arm')
        self.ddq_arm = (dq_arm - self.dq_arm) / self.dt
        self.q_arm, self.dq_arm = q_arm, dq_arm

    def record_sample(self) -> None:
        super().record_sample()
        g_c, g_s = self.measured_bodies()
        rel = g_c.actInv(g_s)
        self.measured['pos_base_in_client'].append(rel.translation.copy())
        self.measured['rpy_base_in_client'].append(pin.rpy.matrixToRpy(rel.rotation))

    def measured_record(self) -> MissionRecord:
        """The run's record with the relative pose replaced by the one measured on the robots."""
        rec = copy.copy(self.record)
        rec.pos_base_in_client = np.array(self.measured['pos_base_in_client'])
        rec.rpy_base_in_client = np.array(self.measured['rpy_base_in_client'])
        return rec

    def faults(self) -> dict:
        self.tables_left()
        self.twin_left()
        return {ns: {k: n for k, n in t.stats.fault_counts.items() if n} for ns, t in self.tables.items()}


def run_unforced_validation(scenario: MissionScenario, duration_s: float | None = None, record_every_s: float = 0.1,
                            progress=None, twin_config: TwinConfig | None = None, delay_compensation: bool = True,
                            ft_deadband=None) -> dict:
    """Twin-in-the-loop unforced run against the absolute reference; the seed 004 Figs. 8-9 figures.

    Returns the records (``hil``: relative pose measured on the robots; ``hil_integrated``:
    from the admittances' Eq. 23 states; ``reference``) and the comparisons.
    ``delay_compensation=False`` switches the tables' predictor off and ``ft_deadband``
    overrides the scenario's band (both for showing what each part of the chain does).
    """
    sc = validation_scenario(scenario)
    if ft_deadband is not None:
        sc.unforced_validation.ft_deadband = np.asarray(ft_deadband, dtype=float)
    v = sc.unforced_validation
    duration = v.duration_s if duration_s is None else duration_s
    model = ServicerModel(sc.servicer.urdf, sc.servicer.ee_frame)
    hil = TwinHilMission(sc, ArmHold(model, sc.servicer.q_arm_0, v.arm_hold_bandwidth_rad_s), twin_config,
                         delay_compensation)
    hil.run(duration, record_every_s, progress)
    ref = AbsoluteMission(sc, ArmHold(model, sc.servicer.q_arm_0, v.arm_hold_bandwidth_rad_s)).run(duration, record_every_s)
    measured = hil.measured_record()
    return {'hil': measured, 'hil_integrated': hil.record, 'reference': ref,
            'measured_vs_reference': compare_relative_pose(measured, ref),
            'integrated_vs_reference': compare_relative_pose(hil.record, ref),
            'relative_motion_range_m': np.ptp(ref.pos_base_in_client, axis=0).tolist(),
            'table_faults': hil.faults()}
