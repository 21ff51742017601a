"""Deterministic lockstep runner of seed 001's teleoperation with the MuJoCo lab twin in the loop.

The orbit side of :func:`hil_bringup.runners.teleop.run_teleop` with the lab instead of the ideal
models: the slave is a position-controlled industrial robot of the twin (KR 120) with an
F/T sensor at its flange, gripping (:class:`hil_lab_twin.scene.GripConfig`, a compliant
gripper) the client mock-up carried by the payload table (UR10e) on its own F/T sensor
(:func:`hil_lab_twin.scene.teleop_facility_config`). Per controller period ``dt``
(``TeleopConfig.dt``), at ``t_k``:

earth:  operator ``f_m`` -> :class:`VirtualEnvironment` (Eqs. 4-10) -> uplink, as in the ideal runner;
orbit:  measure: slave joints -> :class:`MeasuredSlave` (``x_s``, ``v_s`` by forward kinematics);
        wrist F/T reading (tared) -> ``f_s`` (the wrench the slave applies to the payload, base
        axes, about the grip point = the sensor's measuring frame);
        Eq. (3) -> ``v_s,c``; the commanded end-effector pose advances by ``v_s,c dt`` (the
        velocity interface of a position-controlled robot) -> slave motion table (IK, limits)
        -> joint command (a streamed single-point trajectory reaching it one period later: the
        robot's reference ramps instead of stepping every period, whose phase-locked 500 Hz
        acceleration ripple the 1 kHz F/T would otherwise alias into a force offset of ~2 N on the
        mock-up);
        payload F/T reading (tared) -> client admittance (zero nominal velocity, the payload's
        mass and inertia, CoM at the grapple) -> ``g_c`` -> payload motion table (relative to its
        start pose) -> joint command;
lab:    the twin advances ``dt`` (servo delay, bandwidth, PID; 1 kHz F/T with noise; the grip).

The tables and F/T processing are the rule objects of the ROS nodes
(:class:`hil_motion_table.table.MotionTable`, :class:`hil_sensors.processing.Tare`),
as :class:`hil_lab_twin.lockstep.TableInTheLoop` couples them, without DDS. Before ``t = 0``
the twin settles with the gripper open, both sensors are tared (as the F/T driver does at
start, removing the weights of the tools they carry) and the gripper closes; the records
start at ``t = 0``. Plain Python, no rclpy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pinocchio as pin

from hil_dynamics.client import ClientAdmittance
from hil_dynamics.rigid_body import RigidBody
from hil_dynamics.se3 import transform_wrench
from hil_lab_twin.scene import GRAPPLE_IN_MOCKUP_M, SENSOR_HEIGHT_M, GripConfig, TwinConfig, teleop_facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import flange_target_from_body_motion, make_kinematics
from hil_motion_table.table import MotionTable, TableLimits
from hil_sensors.processing import Tare
from hil_teleop.config import TeleopConfig, TeleopRun, earth_and_link
from hil_teleop.coordinates import x_from_pose
from hil_teleop.slave_law import SlaveSide
from hil_teleop.slave_measurement import MeasuredSlave
from hil_common.errors import ConfigError

# Pose of the payload "CoM" (the grapple: seed 001 grips the payload at its CoM, as the ideal
# runner does) in the payload table's flange frame, and of the payload F/T frame in it.
POSE_GRAPPLE_IN_FLANGE = pin.SE3(np.eye(3), np.array([0.0, 0.0, SENSOR_HEIGHT_M + GRAPPLE_IN_MOCKUP_M]))
POSE_SENSOR_IN_GRAPPLE = pin.SE3(np.eye(3), np.array([0.0, 0.0, -GRAPPLE_IN_MOCKUP_M]))
# Wrist F/T: the sensor reads the wrench its tool side exerts on it, i.e. what the payload does
# to the slave; Eq. (3)'s f_s is the wrench the slave applies to the payload: the opposite.
SLAVE_FT_SIGN = -1.0
WORKSPACE = TableLimits(workspace_min=(-3.0, -3.0, -3.0), workspace_max=(3.0, 3.0, 3.0), max_linear_speed=0.5,
                        max_angular_speed=1.0, sigma_min=0.02)


def twin_config_for(config: TeleopConfig) -> TwinConfig:
    """The teleop facility with the grip compliance of ``config`` (the ideal runner's grip contact)."""
    return teleop_facility_config(grip=GripConfig('slave', 'payload', tuple(config.grip_contact_k),
                                                  tuple(config.grip_contact_d), engaged=False))


@dataclass(frozen=True)
class GraphLoopSettings:
    """What the live graph (``TeleopScenario.twin_node_parameters``) sets beyond this runner's defaults, so the
    lockstep loop can be run as the graph runs it: the twin's grip, each F/T driver's parameters (its processing
    chain, :func:`hil_sensors.ft_driver.wrench_chain`, run on every sensor sample as the driver runs it) and the
    payload table's trajectory lead. The twin's servo and F/T noise are the lab twin node's defaults in both."""

    grip_k: tuple
    grip_d: tuple
    drivers: dict               # sensor -> the F/T driver's validated parameters (check_parameters)
    payload_lead_s: float


def graph_settings(params: dict) -> GraphLoopSettings:
    """The settings of the teleop graph's node parameters ``params`` (``TeleopScenario.twin_node_parameters``):
    one definition for the live graph and this runner."""
    from hil_sensors.ft_driver import check_parameters

    twin = params['lab_twin']
    return GraphLoopSettings(tuple(float(v) for v in twin['grip_stiffness']),
                             tuple(float(v) for v in twin['grip_damping']),
                             {sensor: check_parameters(params[sensor]) for sensor in ('slave_ft', 'payload_ft')},
                             float(params['payload_table']['trajectory_lead_s']))


@dataclass
class TwinSlaveSide:
    """The orbit side wired to a twin: what the ROS graph's nodes hold, as plain objects."""

    twin: LabTwin
    slave: MeasuredSlave
    slave_table: MotionTable
    payload_table: MotionTable
    payload: ClientAdmittance
    slave_tare: Tare
    payload_tare: Tare
    pose_payload_flange_start: pin.SE3
    pose_slave_base_in_world: pin.SE3
    chains: dict | None = None        # sensor -> the F/T driver's WrenchChain (GraphLoopSettings), or None
    _processed: dict | None = None    # sensor -> (sequence, the chain's latest output)

    def reading(self, sensor: str) -> np.ndarray:
        """The sensor's latest sample, tared; with the driver's chain, its latest output (fed by :meth:`sense`)."""
        if self.chains is not None:
            return self._processed[sensor][1]
        tare = self.slave_tare if sensor == 'slave_ft' else self.payload_tare
        return self.twin.wrench_source(sensor)()[0] - np.asarray(tare.offset)

    def sense(self) -> None:
        """With the drivers' chains, after each physics step: each new sample goes through its driver's chain
        (tare, low-pass, dead band, ... as the graph's driver is set), as the driver processes every sample."""
        for sensor, chain in (self.chains or {}).items():
            wrench, _, sequence = self.twin.wrench_source(sensor)()
            if self._processed.get(sensor, (None,))[0] != sequence:
                out = chain.process(wrench)
                if out is not None:
                    self._processed[sensor] = (sequence, np.asarray(out))

    def slave_wrench(self) -> np.ndarray:
        """``f_s``: wrist reading, tared, rotated to the slave base, sign of Eq. (3) (about the grip point)."""
        reading = self.reading('slave_ft')
        rotation = self.slave.kin.forward(self.twin.joint_state('slave').positions).rotation  # sensor axes = flange axes
        return SLAVE_FT_SIGN * np.concatenate((rotation @ reading[:3], rotation @ reading[3:]))

    def payload_wrench_com(self) -> np.ndarray:
        """Payload reading, tared, as the body wrench about the payload CoM (the grapple)."""
        return transform_wrench(POSE_SENSOR_IN_GRAPPLE, self.reading('payload_ft'))

    def payload_grip_in_slave_base(self) -> pin.SE3:
        """Ground truth of the grapple, in the slave base (for the records)."""
        return self.pose_slave_base_in_world.actInv(self.twin.site_pose_in_world('payload_grapple'))


def build_twin_side(config: TeleopConfig, twin_config: TwinConfig | None = None, settle_s: float = 0.3,
                    tare_samples: int = 100, settings: GraphLoopSettings | None = None) -> TwinSlaveSide:
    """Twin, tables, admittance; settle with the gripper open, tare both sensors, close the gripper.
    With ``settings`` the twin's grip and the sensors' processing (the drivers' chains, tared here) are the graph's."""
    if settings is not None and twin_config is None:
        twin_config = twin_config_for(dataclasses.replace(config, grip_contact_k=settings.grip_k,
                                                          grip_contact_d=settings.grip_d))
    twin = LabTwin(twin_config or twin_config_for(config))
    steps = int(round(config.dt / twin.dt))
    slave_kin, payload_kin = make_kinematics('kr120r2500pro'), make_kinematics('ur10e')
    if tuple(slave_kin.joint_names) != twin.joint_names('slave') or tuple(payload_kin.joint_names) != \
            twin.joint_names('payload'):
        raise ConfigError('twin robots must be the KR 120 slave and the UR10e payload table')
    twin.step(int(round(settle_s / twin.dt)))
    chains = None
    if settings is not None:
        from hil_sensors.ft_driver import wrench_chain
        chains = {name: wrench_chain(cfg, cfg['sensor_rate_hz']) for name, cfg in settings.drivers.items()}
    tares = {name: chains[name].tare if chains else Tare() for name in ('slave_ft', 'payload_ft')}
    for tare in tares.values():
        tare.start(tare_samples)
    while any(t.collecting for t in tares.values()):
        twin.step(steps)
        for name, tare in tares.items():
            if chains:                   # the chain adds the sample to its tare and restarts its filter at the end
                chains[name].process(twin.wrench_source(name)()[0])
            else:
                tare.add(twin.wrench_source(name)()[0])
    twin.engage_grip()
    q_slave = twin.joint_state('slave').positions
    slave = MeasuredSlave.aligned_at(slave_kin, q_slave, (0.0, 0.0, SENSOR_HEIGHT_M))
    tables = [MotionTable(kin, WORKSPACE, period=config.dt) for kin in (slave_kin, payload_kin)]
    tables[0].initialize(q_slave)
    q_payload = twin.joint_state('payload').positions
    tables[1].initialize(q_payload)
    body = RigidBody(config.payload_mass_kg, config.payload_inertia())
    base = dict((r.ns, r) for r in twin.config.robots)['slave']
    slave_base = pin.SE3(pin.rpy.rpyToMatrix(*base.base_rpy), np.array(base.base_xyz, dtype=float))
    side = TwinSlaveSide(twin, slave, tables[0], tables[1], ClientAdmittance(body, np.zeros(6)),
                         tares['slave_ft'], tares['payload_ft'], payload_kin.forward(q_payload), slave_base)
    if chains is not None:
        side.chains, side._processed = chains, {}
        side.sense()                 # each filter starts in steady state on the first tared sample
    return side


def run_teleop_twin(config: TeleopConfig, operator: Callable[[float], np.ndarray], duration_s: float,
                    twin_config: TwinConfig | None = None, slave_blocked: Callable[[float], bool] | None = None,
                    on_step: Callable[[float, LabTwin], None] | None = None,
                    settings: GraphLoopSettings | None = None) -> TeleopRun:
    """Run the closed loop with the twin for ``duration_s``; records as :func:`~hil_bringup.runners.teleop.run_teleop`.

    ``on_step(t, twin)`` is called after every control period (e.g. to render the twin).

    ``x_grip_0`` of ``config`` is replaced by the measured start of the slave (the virtual arm
    starts there). ``slave_blocked(t)`` True withholds the slave's joint commands (a robot that
    does not move: a fault test). The returned run also carries ``twin_side`` and per-step
    ``f_payload`` (payload F/T wrench about the CoM, body axes), ``f_grip`` (the twin's grip wrench on
    the payload, world axes, ground truth) and ``tracking_error_m`` (slave
    flange, measured versus commanded).

    ``settings`` (:func:`graph_settings`): the loop as the live graph runs it (its grip, the F/T drivers'
    low-pass on every sample, the payload table's trajectory lead), for comparing the two.
    """
    side = build_twin_side(config, twin_config, settings=settings)
    payload_lead_s = config.dt if settings is None else settings.payload_lead_s
    twin, dt = side.twin, config.dt
    steps = int(round(dt / twin.dt))
    if abs(steps * twin.dt - dt) > 1e-12 or steps < 1:
        raise ConfigError('the controller period must be a whole number of twin steps')
    q0 = twin.joint_state('slave')
    start = side.slave.measure(q0.positions, q0.velocities)
    c = dataclasses.replace(config, x_grip_0=tuple(float(v) for v in start.x_s))
    link = earth_and_link(c)
    venv, uplink, downlink, held = link.venv, link.uplink, link.downlink, link.held
    slave = SlaveSide(link.law, start.pose_ee_in_base)
    last_flange_cmd = side.slave.flange_pose(slave.pose_ee_cmd)
    n = int(round(duration_s / dt))
    rec = {k: np.zeros((n, 6)) for k in ('f_m', 'x_vir', 'v_vir', 'f_vir', 'x_tv', 'v_s_r', 'v_s_c', 'v_s', 'x_s',
                                          'f_s', 'x_p', 'v_p', 'x_s_earth', 'f_p', 'f_grip')}
    rec['x_s_earth'][:] = np.nan
    stale = np.zeros(n, dtype=bool)
    queue = np.zeros(n, dtype=int)
    tracking = np.zeros(n)
    t_axis = np.arange(n) * dt
    x_s_earth = np.full(6, np.nan)
    t0 = twin.time
    for k in range(n):
        t = t_axis[k]
        # -- earth
        f_m = np.asarray(operator(t), dtype=float)
        vs = venv.step(f_m)
        uplink.send(t, (f_m, vs.x_vir))
        # -- orbit: measure, Eq. (3)
        for t_send, msg in uplink.receive(t + 1e-9):
            held.update(t_send, msg)
        cmd_in = held.get(t)
        joints = twin.joint_state('slave')
        meas = side.slave.measure(joints.positions, joints.velocities)
        f_s = side.slave_wrench()
        f_m_d, x_vir_d = (None, None) if cmd_in is None else cmd_in
        cmd = slave.step(f_m_d, x_vir_d, meas.x_s, f_s, dt, v_s_measured=meas.v_s)   # v_s(t - dt) measured
        flange_cmd = side.slave.flange_pose(slave.pose_ee_cmd)
        # slave flange: measured now versus the command of the previous period
        tracking[k] = float(np.linalg.norm(side.slave.kin.forward(joints.positions).translation
                                           - last_flange_cmd.translation))
        last_flange_cmd = flange_cmd
        out = side.slave_table.step(flange_cmd, q_measured=joints.positions, t=t0 + t)
        if slave_blocked is None or not slave_blocked(t):
            twin.command_trajectory('slave', side.slave.joint_names, [(dt, out.q_command)])
        # -- the payload in the loop
        wrench_com = side.payload_wrench_com()
        state = side.payload.step(wrench_com, dt)
        target = flange_target_from_body_motion(side.pose_payload_flange_start, POSE_GRAPPLE_IN_FLANGE,
                                                state.pose_client_in_nominal)
        out_p = side.payload_table.step(target, q_measured=twin.joint_state('payload').positions, t=t0 + t)
        twin.command_trajectory('payload', side.payload_table.kin.joint_names, [(payload_lead_s, out_p.q_command)])
        if side.chains is None:
            twin.step(steps)
        else:
            for _ in range(steps):
                twin.step(1)
                side.sense()
        downlink.send(t, (meas.x_s, f_s))
        for _, (xs_msg, _) in downlink.receive(t + 1e-9):
            x_s_earth = xs_msg
        grip = side.payload_grip_in_slave_base()
        for key, val in (('f_m', f_m), ('x_vir', vs.x_vir), ('v_vir', vs.v_vir), ('f_vir', vs.f_vir),
                         ('x_tv', vs.x_t), ('v_s_r', cmd.v_s_r), ('v_s_c', cmd.v_s_c), ('v_s', meas.v_s),
                         ('x_s', meas.x_s), ('f_s', f_s), ('x_p', x_from_pose(grip)),
                         ('v_p', state.twist_client_rel_body), ('x_s_earth', x_s_earth), ('f_p', wrench_com),
                         ('f_grip', twin.grip_wrench())):
            rec[key][k] = val
        stale[k] = cmd.stale
        queue[k] = uplink.queue_length
        if on_step is not None:
            on_step(t + dt, twin)
    momentum = side.payload.body.momentum_in_parent(side.payload.state.pose_client_in_nominal,
                                                    side.payload.state.twist_client_rel_body)
    run = TeleopRun(t_axis, rec['f_m'], rec['x_vir'], rec['v_vir'], rec['f_vir'], rec['x_tv'], rec['v_s_r'],
                    rec['v_s_c'], rec['v_s'], rec['x_s'], rec['f_s'], rec['x_p'], rec['v_p'], stale, queue,
                    rec['x_s_earth'], momentum, c.delay_s, dt)
    run.twin_side = side
    run.f_payload = rec['f_p']
    run.f_grip = rec['f_grip']
    run.tracking_error_m = tracking
    return run
