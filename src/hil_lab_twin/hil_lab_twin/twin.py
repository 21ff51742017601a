"""The lab twin: MuJoCo physics of the facility behind ros2_control-like command interfaces.

Plain Python (no rclpy): the twin node, the lockstep runner, the tests and the benchmark
all drive this object.

Per position-controlled robot (industrial arm or hexapod legs), one simulation step does

1. commands whose transport delay has elapsed take effect (forward position command, or
   a joint trajectory started from the current reference);
2. the reference passes the robot's finite-bandwidth servo (:class:`FirstOrderServo`);
3. a joint PID at ``stiffness_hz`` (MuJoCo ``position`` actuators, with the derivative and
   integral terms folded into the set-point ``ctrl = q_f + (kv/kp) q_f' + (ki/kp) int e``)
   tracks the filtered reference, with the model's gravity/Coriolis torques fed forward;
   gains scale with each joint's inertia (armature + links) at the initial configuration.

The torque-controlled light-weight arm takes efforts (plus gravity compensation, as the
real arm's torque mode does) after its own delay; its joints have viscous and Coulomb
friction. F/T sensors are sampled every step (see :mod:`hil_lab_twin.ft`).

Time: ``step()`` advances simulated time by one timestep (lockstep, deterministic);
``advance_to(t)`` steps until simulated time reaches ``t`` (real-time pacing passes the
elapsed wall time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mujoco
import numpy as np
import pinocchio as pin

from hil_lab_twin.ft import MUJOCO_SIGN, FtChannel
from hil_lab_twin.scene import RobotBuild, TwinConfig, build_scene
from hil_lab_twin.servo import (CommandRejected, DelayLine, FirstOrderServo, TrajectoryFollower, validate_command,
                                validate_trajectory)
from hil_common.errors import ConfigError, InputError
from hil_dynamics.se3 import cross3


def _index(adr: np.ndarray) -> slice | np.ndarray:
    """``adr`` as a slice when its addresses are consecutive (the usual MJCF layout), else ``adr`` itself.

    The step reads and writes MuJoCo's arrays at these addresses about ten times per robot; a slice
    costs a fifth of an index array there (a view instead of NumPy's fancy indexing), with the same values.
    """
    adr = np.asarray(adr)
    if adr.ndim == 1 and adr.size and np.array_equal(adr, np.arange(adr[0], adr[0] + adr.size)):
        return slice(int(adr[0]), int(adr[0]) + adr.size)
    return adr


@dataclass
class _PositionRobot:
    build: RobotBuild
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    act_ids: np.ndarray
    kp: np.ndarray
    kv: np.ndarray
    ki: np.ndarray
    delay: DelayLine
    servo: FirstOrderServo
    follower: TrajectoryFollower
    integral: np.ndarray
    rejected: int = 0
    accepted: int = 0
    # the step's indexing of the addresses above (:func:`_index`) and its gain ratios (set with the gains)
    qpos_idx: slice | np.ndarray = None
    dof_idx: slice | np.ndarray = None
    act_idx: slice | np.ndarray = None
    kv_over_kp: np.ndarray = None
    ki_over_kp: np.ndarray = None

    def __post_init__(self):
        self.qpos_idx, self.dof_idx, self.act_idx = _index(self.qpos_adr), _index(self.dof_adr), _index(self.act_ids)


@dataclass
class _TorqueArm:
    joint_names: tuple
    qpos_adr: np.ndarray
    dof_adr: np.ndarray
    act_ids: np.ndarray
    delay: DelayLine
    effort: np.ndarray
    gravity_compensation: bool
    finger_act_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    rejected: int = 0
    accepted: int = 0
    finger_target: float = 0.0                   # ramped finger command (ring gripper) [m]
    finger_goal: float = 0.0
    finger_rate: float = 0.0                     # [m/s]; 0: no ring gripper
    finger_closed_goal: float = 0.0
    finger_open: float = 0.0
    # the step's indexing of the addresses above (:func:`_index`)
    qpos_idx: slice | np.ndarray = None
    dof_idx: slice | np.ndarray = None
    act_idx: slice | np.ndarray = None

    def __post_init__(self):
        self.qpos_idx, self.dof_idx, self.act_idx = _index(self.qpos_adr), _index(self.dof_adr), _index(self.act_ids)


@dataclass
class JointState:
    names: tuple
    positions: np.ndarray
    velocities: np.ndarray
    efforts: np.ndarray


class LabTwin:
    """MuJoCo twin of the facility described by a :class:`TwinConfig`."""

    def __init__(self, config: TwinConfig | None = None):
        self.config = config or TwinConfig()
        self.xml, self.builds = build_scene(self.config)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        self.dt = float(self.model.opt.timestep)
        self.steps = 0
        self._robots: dict[str, _PositionRobot] = {}
        self._arms: dict[str, _TorqueArm] = {}
        self._ft: dict[str, tuple[FtChannel, int, int, int]] = {}
        self._ft_channels: list[tuple[FtChannel, int, int]] = []
        self._servo_cfg = {r.ns: r.servo for r in self.config.robots}
        for ns, build in self.builds.items():
            self._init_robot(ns, build)
        mujoco.mj_forward(self.model, self.data)
        self._set_gains()
        self.press_actuator = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, 'press_force')
        self._pushes: dict[int, tuple] = {}
        self._renderer = None
        self._init_grip()

    # -- set-up -------------------------------------------------------------------------
    def _jid(self, name: str) -> int:
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise KeyError(f'joint {name!r} not in the twin model')
        return jid

    def _init_robot(self, ns: str, build: RobotBuild) -> None:
        jids = [self._jid(j) for j in build.mj_joints]
        qpos_adr = np.array([self.model.jnt_qposadr[j] for j in jids])
        dof_adr = np.array([self.model.jnt_dofadr[j] for j in jids])
        act_ids = np.array([mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, f'{j}_servo')
                            for j in build.mj_joints])
        qpos = build.q_initial - build.q_offset
        self.data.qpos[qpos_adr] = qpos
        cfg = self._servo_cfg[ns]
        n = len(jids)
        self._robots[ns] = _PositionRobot(
            build=build, qpos_adr=qpos_adr, dof_adr=dof_adr, act_ids=act_ids, kp=np.zeros(n), kv=np.zeros(n),
            ki=np.zeros(n), delay=DelayLine(cfg.delay_s), servo=FirstOrderServo(build.q_initial, cfg.bandwidth_hz, self.dt),
            follower=TrajectoryFollower(build.q_initial), integral=np.zeros(n))
        self.data.ctrl[act_ids] = qpos
        if build.arm_joints:
            ajids = [self._jid(j) for j in build.arm_joints]
            arm_cfg = self.config.arm
            arm = _TorqueArm(
                joint_names=build.arm_joint_names, qpos_adr=np.array([self.model.jnt_qposadr[j] for j in ajids]),
                dof_adr=np.array([self.model.jnt_dofadr[j] for j in ajids]),
                act_ids=np.array([mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, f'{j}_torque')
                                  for j in build.arm_joints]),
                delay=DelayLine(arm_cfg.delay_s), effort=np.zeros(len(ajids)),
                gravity_compensation=arm_cfg.gravity_compensation,
                finger_act_ids=np.array([mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR,
                                                           f'{ns}_arm_finger_{s}_servo') for s in ('left', 'right')]))
            self.data.qpos[arm.qpos_adr] = build.arm_q_initial
            grip = arm_cfg.gripper
            if grip is not None:
                arm.finger_open = arm.finger_target = arm.finger_goal = grip.open_half_m
                arm.finger_rate = grip.open_half_m / grip.closing_time_s
                arm.finger_closed_goal = -1.5 * grip.grip_force_n / grip.finger_stiffness_n_m
                for side in ('left', 'right'):
                    self.data.qpos[self.model.jnt_qposadr[self._jid(f'{ns}_arm_finger_{side}_joint')]] = grip.open_half_m
                self.data.ctrl[arm.finger_act_ids] = grip.open_half_m
                # the grip's no-slip post-processor (RingGripperConfig.noslip_iterations)
                self.model.opt.noslip_iterations = max(int(self.model.opt.noslip_iterations), grip.noslip_iterations)
            self._arms[f'{ns}_arm'] = arm
        for sensor, ft_cfg in build.ft_sensors:
            site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, f'{sensor}_site')
            force = self.model.sensor_adr[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SENSOR, f'{sensor}_force')]
            torque = self.model.sensor_adr[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SENSOR, f'{sensor}_torque')]
            self._ft[sensor] = (FtChannel(sensor, ft_cfg, step_s=self.dt), site, force, torque)
            self._ft_channels.append((self._ft[sensor][0], int(force), int(torque)))   # what the step samples

    def _set_gains(self) -> None:
        """PID gains per joint from the joint-space inertia diagonal at the initial configuration."""
        full = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, self.data, full)
        for ns, robot in self._robots.items():
            cfg = self._servo_cfg[ns]
            wn = 2.0 * math.pi * cfg.stiffness_hz
            inertia = np.array([full[d, d] for d in robot.dof_adr])
            robot.kp = inertia * wn * wn
            robot.kv = 2.0 * cfg.damping_ratio * wn * inertia
            robot.ki = robot.kp * wn * cfg.integral_ratio
            self.model.actuator_gainprm[robot.act_ids, 0] = robot.kp
            self.model.actuator_biasprm[robot.act_ids, 1] = -robot.kp
            self.model.actuator_biasprm[robot.act_ids, 2] = -robot.kv
            # the set point's ratios, computed once (the step divided them at every step: the same values)
            robot.kv_over_kp = robot.kv / robot.kp
            robot.ki_over_kp = robot.ki / robot.kp

    # -- interfaces ---------------------------------------------------------------------
    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def position_robots(self) -> tuple[str, ...]:
        return tuple(self._robots)

    @property
    def payload_robots(self) -> tuple[str, ...]:
        """Tables carrying a client mock-up (which :meth:`push_payload` can push)."""
        return tuple(ns for ns in self._robots
                     if mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, f'{ns}_mockup') >= 0)

    @property
    def torque_arms(self) -> tuple[str, ...]:
        return tuple(self._arms)

    @property
    def ft_sensor_names(self) -> tuple[str, ...]:
        return tuple(self._ft)

    def joint_names(self, ns: str) -> tuple[str, ...]:
        if ns in self._arms:
            return self._arms[ns].joint_names
        return self._robots[ns].build.joint_names

    def rejected_count(self, ns: str) -> int:
        return (self._arms.get(ns) or self._robots[ns]).rejected

    def _accept(self, target, check, kind: str) -> bool:
        """Validate a command with ``check()``; queue it behind the transport delay or count a rejection."""
        try:
            payload = check()
        except CommandRejected:
            target.rejected += 1
            return False
        return self._queue(target, kind, payload)

    def _accept_vector(self, target, values, n: int, kind: str) -> bool:
        """:meth:`_accept` of a vector command of ``n`` values (:func:`validate_command`), without the closure:
        this runs for every robot at every step of a lockstep run."""
        try:
            payload = validate_command(values, n)
        except CommandRejected:
            target.rejected += 1
            return False
        return self._queue(target, kind, payload)

    def _queue(self, target, kind: str, payload) -> bool:
        """Queue a validated command behind ``target``'s transport delay (and count it)."""
        target.accepted += 1
        target.delay.push(float(self.data.time), (kind, payload))
        return True

    def command_positions(self, ns: str, positions) -> bool:
        """forward_position_controller/commands: joint positions (m for hexapod legs). False if rejected."""
        robot = self._robots[ns]
        return self._accept_vector(robot, positions, len(robot.build.joint_names), 'position')

    def command_trajectory(self, ns: str, joint_names, points) -> bool:
        """joint_trajectory_controller/joint_trajectory: ``points`` = [(time_from_start, positions)]."""
        robot = self._robots[ns]
        return self._accept(robot, lambda: validate_trajectory(joint_names, points, robot.build.joint_names),
                            'trajectory')

    def command_efforts(self, ns: str, efforts) -> bool:
        """forward_effort_controller/commands of the torque-controlled arm [N m]."""
        arm = self._arms[ns]
        return self._accept_vector(arm, efforts, len(arm.joint_names), 'effort')

    def command_gripper(self, ns: str, opening: float) -> None:
        """Finger position of the servicer arm's gripper [m] (positive opens)."""
        self.data.ctrl[self._arms[ns].finger_act_ids] = float(np.clip(opening, -0.04, 0.03))

    def has_ring_gripper(self, ns: str) -> bool:
        """Whether torque arm ``ns`` carries the ring gripper (:class:`hil_lab_twin.scene.RingGripperConfig`)."""
        return self._arms[ns].finger_rate > 0

    def close_gripper(self, ns: str) -> None:
        """Close the ring gripper of arm ``ns``: the fingers travel from open to the tool point in the
        configured closing time and then squeeze with the configured force."""
        arm = self._arms[ns]
        if arm.finger_rate <= 0:
            raise ConfigError(f'{ns} has no ring gripper (ArmConfig.gripper)')
        arm.finger_goal = arm.finger_closed_goal

    def open_gripper(self, ns: str) -> None:
        arm = self._arms[ns]
        if arm.finger_rate <= 0:
            raise ConfigError(f'{ns} has no ring gripper (ArmConfig.gripper)')
        arm.finger_goal = arm.finger_open

    def finger_positions(self, ns: str) -> np.ndarray:
        """Half-openings of the ring gripper's (left, right) fingers [m] (0: pads at the tool point)."""
        prefix = ns
        return np.array([self.data.qpos[self.model.jnt_qposadr[self._jid(f'{prefix}_finger_{s}_joint')]]
                         for s in ('left', 'right')])

    def contact_wrench_between(self, body_a: str, body_b_prefix: str) -> np.ndarray:
        """Sum of the contact wrenches that bodies whose names start with ``body_b_prefix`` exert on
        the subtree-less body ``body_a``: world axes, about the origin of ``body_a`` ``[f; tau]``
        (ground truth for tests; MuJoCo ``mj_contactForce``)."""
        m, d = self.model, self.data
        a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body_a)
        origin = d.xpos[a]
        total = np.zeros(6)
        local = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            names = (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b1), mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b2))
            if a == b1 and names[1].startswith(body_b_prefix):
                sign = -1.0          # the contact force acts on geom2's body along the frame's normal
            elif a == b2 and names[0].startswith(body_b_prefix):
                sign = 1.0
            else:
                continue
            mujoco.mj_contactForce(m, d, i, local)
            frame = c.frame.reshape(3, 3)        # rows: normal, tangents (world)
            force = sign * (frame.T @ local[:3])
            torque = sign * (frame.T @ local[3:])
            total[:3] += force
            total[3:] += torque + cross3(c.pos - origin, force)
        return total

    def joint_state(self, ns: str) -> JointState:
        if ns in self._arms:
            arm = self._arms[ns]
            return JointState(arm.joint_names, self.joint_positions(ns), self.joint_velocities(ns), arm.effort.copy())
        robot = self._robots[ns]
        return JointState(robot.build.joint_names, self.joint_positions(ns), self.joint_velocities(ns),
                          self.data.actuator_force[robot.act_idx].copy())

    def joint_positions(self, ns: str) -> np.ndarray:
        """``joint_state(ns).positions`` alone (a new array): what a lockstep runner reads at every step,
        without building the rest of the :class:`JointState`."""
        arm = self._arms.get(ns)
        if arm is not None:
            return self.data.qpos[arm.qpos_idx].copy()
        robot = self._robots[ns]
        return self.data.qpos[robot.qpos_idx] + robot.build.q_offset

    def joint_velocities(self, ns: str) -> np.ndarray:
        """``joint_state(ns).velocities`` alone (a new array)."""
        target = self._arms.get(ns) or self._robots[ns]
        return self.data.qvel[target.dof_idx].copy()

    def show_joints(self, ns: str, positions) -> None:
        """Put robot ``ns`` at ``positions`` (as its ``joint_states`` give them), at rest, and update the
        kinematics: for pictures of a recorded run (the physics is not stepped)."""
        robot = self._robots[ns]
        q = np.asarray(positions, dtype=float)
        if q.shape != (len(robot.qpos_adr),) or not np.all(np.isfinite(q)):
            raise InputError(f'{ns}: {len(robot.qpos_adr)} finite joint positions expected')
        self.data.qpos[robot.qpos_adr] = q - robot.build.q_offset
        self.data.qvel[robot.dof_adr] = 0.0
        mujoco.mj_kinematics(self.model, self.data)

    def site_pose_in_world(self, site: str) -> pin.SE3:
        sid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, site)
        if sid < 0:
            raise KeyError(f'site {site!r} not in the twin model')
        return pin.SE3(self.data.site_xmat[sid].reshape(3, 3).copy(), self.data.site_xpos[sid].copy())

    def body_pose_in_world(self, body: str) -> pin.SE3:
        bid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, body)
        if bid < 0:
            raise KeyError(f'body {body!r} not in the twin model')
        return pin.SE3(self.data.xmat[bid].reshape(3, 3).copy(), self.data.xpos[bid].copy())

    def base_pose(self, ns: str) -> pin.SE3:
        """``pose_base_in_world`` of a position-controlled robot (its mounting in the lab)."""
        return pin.SE3(self._robots[ns].build.base_pose)

    def flange_pose_in_world(self, ns: str) -> pin.SE3:
        return self.site_pose_in_world(self._robots[ns].build.flange_site)

    def flange_site(self, ns: str) -> str:
        """Name of the MJCF site at a position-controlled robot's flange."""
        return self._robots[ns].build.flange_site

    def servo_config(self, ns: str):
        """The :class:`hil_lab_twin.scene.ServoConfig` (delay, bandwidth) of a position-controlled robot."""
        return self._servo_cfg[ns]

    def flange_pose(self, ns: str) -> pin.SE3:
        """Measured ``pose_flange_in_base`` of a table, from the simulation (ground truth)."""
        build = self._robots[ns].build
        return build.base_pose.actInv(self.site_pose_in_world(build.flange_site))

    def wrench_true(self, sensor: str) -> np.ndarray:
        """Noise-free ``wrench_sensor_in_sensor`` now (see :mod:`hil_lab_twin.ft` for the convention)."""
        _, _, force, torque = self._ft[sensor]
        return self._wrench_true_at(force, torque)

    def _wrench_true_at(self, force: int, torque: int) -> np.ndarray:
        """:meth:`wrench_true` of the sensor whose force and torque readings start at ``sensordata[force]`` and
        ``sensordata[torque]`` (a new array); one slice when they are adjacent (as :mod:`hil_lab_twin.scene`
        declares them), no concatenation."""
        data = self.data.sensordata
        if torque == force + 3:
            return MUJOCO_SIGN * data[force:force + 6]
        return MUJOCO_SIGN * np.concatenate([data[force:force + 3], data[torque:torque + 3]])

    def wrench_source(self, sensor: str):
        """A callable returning ``(wrench_sensor_in_sensor, stamp_s, sequence)`` of the latest sample.

        This is what a simulated RDT/UDP sensor server plugs in to stream the twin's sensor.
        """
        channel = self._ft[sensor][0]
        return lambda: (channel.read(), channel.stamp, channel.sequence)

    def push_payload(self, ns: str, force_world, torque_world=(0.0, 0.0, 0.0), point_world=None) -> None:
        """Apply an external force (at ``point_world``, default the mock-up's grapple) plus a couple
        to the client mock-up of table ``ns``, in world axes, until changed (zero to release).

        A virtual operator pushing the mock-up. The point of application is fixed to the
        mock-up and follows it; MuJoCo applies ``xfrc_applied`` at the body's CoM, so the
        force's moment about the CoM is added to the couple at every step.
        """
        force = np.asarray(force_world, dtype=float).reshape(3)
        couple = np.asarray(torque_world, dtype=float).reshape(3)
        if not (np.all(np.isfinite(force)) and np.all(np.isfinite(couple))):
            raise InputError('push must be finite')
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, f'{ns}_mockup')
        if body < 0:
            raise KeyError(f'{ns} carries no client mock-up')
        point = self.site_pose_in_world(f'{ns}_grapple').translation if point_world is None else np.asarray(point_world)
        rotation = self.data.xmat[body].reshape(3, 3)
        point_in_body = rotation.T @ (point - self.data.xpos[body])
        self._pushes[body] = (force, couple, point_in_body)
        self._apply_pushes()

    def _apply_pushes(self) -> None:
        for body, (force, couple, point_in_body) in self._pushes.items():
            point = self.data.xpos[body] + self.data.xmat[body].reshape(3, 3) @ point_in_body
            self.data.xfrc_applied[body, :3] = force
            self.data.xfrc_applied[body, 3:] = couple + cross3(point - self.data.xipos[body], force)

    # -- the grip between two robots (seed 001's HIL) ----------------------------------------
    def _init_grip(self) -> None:
        grip = self.config.grip
        self._grip_rest: pin.SE3 | None = None
        self.grip_wrench_world = np.zeros(6)
        if grip is None:
            self._grip_sites = None
            return
        sites = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
                 for name in (f'{grip.slave}_ft_site', f'{grip.payload}_grapple')]
        self._grip_sites = tuple(sites)
        self._grip_bodies = tuple(int(self.model.site_bodyid[s]) for s in sites)
        self._grip_k = np.asarray(grip.stiffness, dtype=float)
        self._grip_d = np.asarray(grip.damping, dtype=float)
        self._grip_vel = np.zeros(6)
        if grip.engaged:
            self.engage_grip()

    @property
    def grip_engaged(self) -> bool:
        return self._grip_rest is not None

    def engage_grip(self) -> None:
        """Close the gripper where it is: the grapple's present pose in the slave's grip frame
        (``pose_grapple_in_grip``) becomes the spring's rest pose."""
        if self._grip_sites is None:
            raise ConfigError('the twin was built without a grip (TwinConfig.grip)')
        self._grip_rest = self._site_pose(self._grip_sites[0]).actInv(self._site_pose(self._grip_sites[1]))

    def release_grip(self) -> None:
        """Open the gripper: no grip wrench from the next step on."""
        self._grip_rest = None
        self.grip_wrench_world = np.zeros(6)

    def _site_pose(self, sid: int) -> pin.SE3:
        return pin.SE3(self.data.site_xmat[sid].reshape(3, 3).copy(), self.data.site_xpos[sid].copy())

    def _apply_grip(self) -> None:
        """The gripper's 6-DOF spring-damper, equal and opposite on the two bodies.

        With ``G`` the slave grip frame (rotation ``R_G``), ``T = G * rest`` where the grapple
        should be and ``P`` where it is (world), the wrench on the payload about the grapple
        point, world axes, is ``R_G (K e + D e_dot)`` per block with
        ``e = [R_G^T (p_T - p_P); R_G^T log3(R_T R_P^T)]`` and ``e_dot`` the same blocks of the
        relative velocity (target point on the slave body minus grapple; angular velocities).
        Its opposite acts on the slave's end body at the same point, so the grip conserves
        linear and angular momentum. MuJoCo applies ``xfrc_applied`` at a body's CoM: the
        force's moment about each CoM is added. Poses and velocities are those of the last
        completed step (the spring is sampled at the twin's time step).
        """
        d = self.data
        site_g, site_p = self._grip_sites
        grip, payload = self._site_pose(site_g), self._site_pose(site_p)
        target = grip * self._grip_rest
        r_g = grip.rotation
        vel = self._grip_vel
        mujoco.mj_objectVelocity(self.model, d, mujoco.mjtObj.mjOBJ_SITE, site_g, vel, 0)   # [omega; v] world
        w_g, v_g = vel[:3].copy(), vel[3:].copy()
        mujoco.mj_objectVelocity(self.model, d, mujoco.mjtObj.mjOBJ_SITE, site_p, vel, 0)
        w_p, v_p = vel[:3].copy(), vel[3:].copy()
        v_target = v_g + cross3(w_g, target.translation - grip.translation)
        e = np.concatenate((r_g.T @ (target.translation - payload.translation),
                            r_g.T @ pin.log3(target.rotation @ payload.rotation.T)))
        e_dot = np.concatenate((r_g.T @ (v_target - v_p), r_g.T @ (w_g - w_p)))
        local = self._grip_k * e + self._grip_d * e_dot
        force, torque = r_g @ local[:3], r_g @ local[3:]
        self.grip_wrench_world = np.concatenate((force, torque))
        point = payload.translation
        for body, sign in ((self._grip_bodies[1], 1.0), (self._grip_bodies[0], -1.0)):
            d.xfrc_applied[body, :3] += sign * force
            d.xfrc_applied[body, 3:] += sign * (torque + cross3(point - d.xipos[body], force))

    def grip_wrench(self) -> np.ndarray:
        """The grip's wrench on the payload mock-up in the last step: world axes, about the grapple point
        ``[f; tau]`` (the slave's end receives its opposite)."""
        return self.grip_wrench_world.copy()

    def config_for_sensor(self, sensor: str):
        """The :class:`hil_lab_twin.scene.FtConfig` of an F/T sensor."""
        return self._ft[sensor][0].config

    def set_press_force(self, force: float) -> None:
        if self.press_actuator < 0:
            raise ConfigError('the twin was built without a press (TwinConfig.press)')
        self.data.ctrl[self.press_actuator] = float(force)

    # -- time ---------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self._step_once()

    def advance_to(self, t: float, max_steps: int = 1000) -> int:
        """Step until simulated time reaches ``t`` (at most ``max_steps``); returns steps taken."""
        k = 0
        while self.data.time + 0.5 * self.dt <= t and k < max_steps:
            self._step_once()
            k += 1
        return k

    def _step_once(self) -> None:
        """One physics step (the module docstring). The hot loop of every lockstep runner: the addresses
        are indexed as slices where they are consecutive and the constants are read once (see
        :func:`_index`); the arithmetic and its order are those of the readable form."""
        d = self.data
        t = float(d.time)
        dt = self.dt
        qfrc_applied, qfrc_bias, ctrl, qpos = d.qfrc_applied, d.qfrc_bias, d.ctrl, d.qpos
        qfrc_applied[:] = 0.0
        for robot in self._robots.values():
            follower = robot.follower
            for kind, payload in robot.delay.pop_due(t):
                if kind == 'position':
                    follower.set_hold(payload)
                else:
                    follower.start(t, follower.sample(t), payload)
            servo, q_offset = robot.servo, robot.build.q_offset
            q_f = servo.update(follower.sample(t))
            q_meas = qpos[robot.qpos_idx] + q_offset
            robot.integral += (q_f - q_meas) * dt
            set_point = q_f + robot.kv_over_kp * servo.velocity + robot.ki_over_kp * robot.integral
            ctrl[robot.act_idx] = set_point - q_offset
            dof = robot.dof_idx
            qfrc_applied[dof] = qfrc_bias[dof]
        for arm in self._arms.values():
            for _kind, tau in arm.delay.pop_due(t):
                arm.effort = tau
            ctrl[arm.act_idx] = arm.effort
            if arm.finger_rate > 0:
                step = arm.finger_rate * dt
                arm.finger_target += float(np.clip(arm.finger_goal - arm.finger_target, -step, step))
                ctrl[arm.finger_act_ids] = arm.finger_target
            if arm.gravity_compensation:
                dof = arm.dof_idx
                qfrc_applied[dof] = qfrc_bias[dof]
        if self._grip_sites is not None:
            d.xfrc_applied[list(self._grip_bodies)] = 0.0
        if self._pushes:
            self._apply_pushes()
        if self._grip_rest is not None:
            self._apply_grip()
        mujoco.mj_step(self.model, d)
        self.steps += 1
        t = float(d.time)
        for channel, force, torque in self._ft_channels:
            channel.sample(t, self._wrench_true_at(force, torque))

    # -- pictures -----------------------------------------------------------------------
    def render(self, width: int = 640, height: int = 480, camera: str = 'overview') -> np.ndarray:
        """An RGB image (needs an offscreen GL: ``MUJOCO_GL=egl``)."""
        if self._renderer is None or (self._renderer.width, self._renderer.height) != (width, height):
            self._renderer = mujoco.Renderer(self.model, height, width)
        self._renderer.update_scene(self.data, camera=camera)
        return self._renderer.render()

    def render_png(self, path, width: int = 640, height: int = 480, camera: str = 'overview') -> None:
        from hil_lab_twin.png import write_png

        write_png(path, self.render(width, height, camera))

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
