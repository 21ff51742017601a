"""Configuration of the lab twin and assembly of the whole MJCF scene (no rclpy).

Defaults (SI units):

* servo: transport delay 4 ms (KUKA RSI's cycle), first-order position-loop bandwidth
  10 Hz, joint PD at 25 Hz with integral action tracking the filtered reference;
* F/T: 1 kHz samples, white noise 0.05 N / 0.003 N m, zero bias (ATI Gamma/Omega class);
* light-weight arm: viscous 0.5 N m s/rad and Coulomb 0.3 N m friction per joint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from hil_lab_twin import mjcf
from hil_motion_table.robot_models import SERIAL_ROBOTS, hexapod_spec, rpy_matrix
from hil_common.errors import ConfigError, Unreachable

KINDS = ('serial', 'hexapod')
SENSOR_HEIGHT_M = 0.04        # mjcf.ft_sensor_body default: measuring frame above the flange
WRIST_SENSOR_HEIGHT_M = 0.03  # the wrist sensor between the arm's flange and the gripper
PAYLOADS = ('client_mockup', 'servicer_arm', 'probe', 'none')


@dataclass(frozen=True)
class ServoConfig:
    """Position servo of an industrial robot or hexapod leg."""

    delay_s: float = 0.004
    bandwidth_hz: float = 10.0
    stiffness_hz: float = 25.0
    damping_ratio: float = 1.0
    integral_ratio: float = 0.2

    def check(self, where: str) -> None:
        if not (math.isfinite(self.delay_s) and self.delay_s >= 0):
            raise ConfigError(f'{where}.delay_s must be >= 0')
        for name in ('bandwidth_hz', 'stiffness_hz', 'damping_ratio'):
            if not getattr(self, name) > 0:
                raise ConfigError(f'{where}.{name} must be > 0')
        if not self.integral_ratio >= 0:
            raise ConfigError(f'{where}.integral_ratio must be >= 0')


@dataclass(frozen=True)
class FtConfig:
    """F/T sensor imperfections: sample rate, white noise (std) and constant bias (sensor frame)."""

    rate_hz: float = 1000.0
    noise_force_std: float = 0.05
    noise_torque_std: float = 0.003
    bias: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    seed: int = 0

    def check(self, where: str) -> None:
        if not self.rate_hz > 0:
            raise ConfigError(f'{where}.rate_hz must be > 0')
        if self.noise_force_std < 0 or self.noise_torque_std < 0:
            raise ConfigError(f'{where}: noise standard deviations must be >= 0')
        if len(self.bias) != 6 or not all(math.isfinite(b) for b in self.bias):
            raise ConfigError(f'{where}.bias must be 6 finite numbers')


def pose_from_xyz_rpy(values) -> pin.SE3:
    """``[x, y, z, roll, pitch, yaw]`` (m, rad; ``R = Rz Ry Rx``) as a pose."""
    v = [float(x) for x in values]
    return pin.SE3(rpy_matrix(v[3:6]), np.array(v[:3]))


@dataclass(frozen=True)
class RingMockupConfig:
    """The client mock-up of a calibrated facility: the launch-adapter ring's lip as collision
    geometry (:func:`hil_lab_twin.mjcf.ring_mockup`). ``pose_grasp_in_sensor_xyz_rpy``: the
    grasp frame (centre of the lip's cross-section where the fingers close; x the ring axis into
    the mock-up, y radial) in the client F/T sensor's measuring frame."""

    pose_grasp_in_sensor_xyz_rpy: tuple
    ring_radius_m: float = 0.16
    lip_thickness_m: float = 0.01
    lip_depth_m: float = 0.04
    segments: int = 24
    box_half_m: tuple = (0.15, 0.15, 0.08)
    box_mass_kg: float = 4.0
    ring_mass_kg: float = 1.5


@dataclass(frozen=True)
class RingGripperConfig:
    """The servicer's two-finger gripper on the wrist F/T sensor (:func:`hil_lab_twin.mjcf.ring_gripper`).

    ``pose_tool_in_flange_xyz_rpy``: the tool frame on the arm's flange (the scenario's
    ``servicer.pose_tool_in_flange``); the pads are centred on it. The fingers close from
    ``open_half_m`` (half-opening) to the tool point in ``closing_time_s`` (the commanded finger
    position ramps, as a gripper's speed setting does) and squeeze with at most
    ``grip_force_n`` per finger (the finger drive's force limit, MuJoCo ``forcerange``).
    ``noslip_iterations``: MuJoCo's no-slip post-processor (``mjOption.noslip_iterations``). The
    grip must carry the tumbling stack's steady internal load (~15 N, ~9.5 N m) without creeping;
    MuJoCo's soft-constraint friction lets the pads creep and turn on the lip under it (which
    unrigidises the stack, docs/envisat_capture.md); 0 keeps that soft friction.
    """

    pose_tool_in_flange_xyz_rpy: tuple = (0.0, 0.0, 0.15, 0.0, 0.0, 0.0)
    open_half_m: float = 0.04
    closing_time_s: float = 0.5
    grip_force_n: float = 300.0
    finger_stiffness_n_m: float = 2e4
    noslip_iterations: int = 10

    def check(self, where: str) -> None:
        for name in ('open_half_m', 'closing_time_s', 'grip_force_n', 'finger_stiffness_n_m'):
            if not getattr(self, name) > 0:
                raise ConfigError(f'{where}.{name} must be > 0')
        if not (isinstance(self.noslip_iterations, int) and self.noslip_iterations >= 0):
            raise ConfigError(f'{where}.noslip_iterations must be an integer >= 0')


@dataclass(frozen=True)
class ProbeConfig:
    """A docking probe on a robot's F/T sensor (payload ``probe``; seed 003's facility compliance).

    A rod along ``axis_in_sensor`` (unit vector in the sensor's measuring frame) ending in a ball of
    ``tip_radius_m`` at ``length_m``, on a slide joint along the axis with ``stiffness_n_m`` and
    ``damping_ns_m``: the facility's lumped compliance ``k_L``, ``b_L`` (seed 003 Eqs. 16-18) as a
    physical spring in the mock-up, so the sensor measures ``k_L x + b_L x'`` for a compression ``x``.
    The sliding part (``tip_mass_kg``) does not sag on its spring (MuJoCo ``gravcomp``, as a real
    probe's spring is preloaded against a stop); the sensor still reads the probe's weight, which
    the driver tares. The probe is light (0.1 + 0.05 kg) because the sensor also reads its inertia:
    its sliding part rings on the spring when the arm starts and stops. The ball collides only with
    the dock target (:class:`DockTargetConfig`), with the stiff contact ``contact_solref``: in
    MuJoCo's mass-normalised soft contact its stiffness is about ``tip_mass_kg / timeconst^2``, 4e5
    N/m for the defaults (0.5 ms, which needs a 0.25 ms time step), two orders of magnitude above a
    lab's ``k_L``, in series with it.
    """

    axis_in_sensor: tuple = (0.0, 0.0, 1.0)
    length_m: float = 0.12
    tip_radius_m: float = 0.015
    tip_mass_kg: float = 0.1
    base_mass_kg: float = 0.05
    stiffness_n_m: float = 4000.0
    damping_ns_m: float = 20.0
    contact_solref: tuple = (0.0005, 1.0)

    def check(self, where: str) -> None:
        axis = np.asarray(self.axis_in_sensor, dtype=float)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or abs(np.linalg.norm(axis) - 1.0) > 1e-9:
            raise ConfigError(f'{where}.axis_in_sensor must be a unit vector')
        for name in ('length_m', 'tip_radius_m', 'tip_mass_kg', 'base_mass_kg', 'stiffness_n_m'):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):
                raise ConfigError(f'{where}.{name} must be finite and > 0')
        if not (math.isfinite(self.damping_ns_m) and self.damping_ns_m >= 0):
            raise ConfigError(f'{where}.damping_ns_m must be finite and >= 0')
        if len(self.contact_solref) != 2 or not all(math.isfinite(v) and v > 0 for v in self.contact_solref):
            raise ConfigError(f'{where}.contact_solref must be two positive values (timeconst, dampratio)')


@dataclass(frozen=True)
class DockTargetConfig:
    """The target's docking plate, fixed in the lab: a box whose face, through ``face_xyz`` with outward
    normal ``face_normal`` (world), meets a probe's ball."""

    face_xyz: tuple = (0.0, 0.0, 0.0)
    face_normal: tuple = (-1.0, 0.0, 0.0)
    half_size_m: tuple = (0.08, 0.08, 0.01)

    def check(self) -> None:
        n = np.asarray(self.face_normal, dtype=float)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or abs(np.linalg.norm(n) - 1.0) > 1e-9:
            raise ConfigError('dock_target.face_normal must be a unit vector')
        if len(self.half_size_m) != 3 or not all(math.isfinite(v) and v > 0 for v in self.half_size_m):
            raise ConfigError('dock_target.half_size_m must be three positive values')


@dataclass(frozen=True)
class ArmConfig:
    """The torque-controlled light-weight arm carried by the servicer robot."""

    viscous_friction: float = 0.5
    coulomb_friction: float = 0.3
    armature: float = 0.1
    delay_s: float = 0.001
    gravity_compensation: bool = True
    q_initial: tuple = (0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0)
    wrist_ft: FtConfig = FtConfig(seed=7)
    gripper: RingGripperConfig | None = None      # None: the plain two-finger gripper of mjcf.gripper
    # The torque interface's joint-torque loop (an LBR iiwa's torque mode: each joint's output
    # torque sensor feeds back with gain K_T). The gear friction sits inside that loop, so the
    # link sees it divided by (1 + K_T) (Albu-Schaeffer, Ott, Hirzinger, IJRR 26(1) 2007, Sec. 3:
    # torque feedback scales the motor inertia and friction by 1/(1 + K_T)). 0: no torque loop,
    # the full Coulomb/viscous friction acts on the link.
    torque_loop_gain: float = 0.0


@dataclass(frozen=True)
class RobotConfig:
    """One robot of the facility, under ROS namespace ``ns``."""

    ns: str
    kind: str = 'serial'
    model: str = 'ur10e'
    payload: str = 'client_mockup'
    base_xyz: tuple = (0.0, 0.0, 0.0)
    base_rpy: tuple = (0.0, 0.0, 0.0)
    q_initial: tuple | None = None
    servo: ServoConfig = ServoConfig()
    ft: FtConfig = FtConfig()
    armature: tuple | None = None
    mockup: RingMockupConfig | None = None        # payload client_mockup: None = mjcf.client_mockup
    sensor_in_flange_xyz_rpy: tuple | None = None  # F/T measuring frame on the flange (None: on the 0.04 m sensor)
    probe: ProbeConfig | None = None              # payload probe: None = ProbeConfig()

    def check(self) -> None:
        where = f'robots[{self.ns}]'
        if not self.ns.isidentifier():
            raise ConfigError(f'{where}.ns must be an identifier')
        if self.kind not in KINDS:
            raise ConfigError(f'{where}.kind {self.kind!r} is not one of {KINDS}')
        if self.kind == 'serial' and self.model not in SERIAL_ROBOTS:
            raise ConfigError(f'{where}.model {self.model!r} is not one of {sorted(SERIAL_ROBOTS)}')
        if self.payload not in PAYLOADS:
            raise ConfigError(f'{where}.payload {self.payload!r} is not one of {PAYLOADS}')
        self.servo.check(f'{where}.servo')
        self.ft.check(f'{where}.ft')
        if self.probe is not None:
            self.probe.check(f'{where}.probe')


@dataclass(frozen=True)
class PressConfig:
    """A frictionless pusher on a slide joint pressing the ``target`` robot's mock-up side face."""

    target: str
    gap: float = 0.01
    radius: float = 0.02
    mass: float = 0.5


@dataclass(frozen=True)
class GripConfig:
    """A compliant gripper: the end of robot ``slave`` holds the client mock-up's grapple on robot ``payload``.

    Modelled as a 6-DOF spring-damper (:meth:`hil_lab_twin.twin.LabTwin.engage_grip`) between
    the slave's F/T measuring frame (site ``<slave>_ft_site``, the grip point of a robot whose
    payload is ``none``) and the grapple (site ``<payload>_grapple``). ``stiffness`` [N/m, N m/rad]
    and ``damping`` [N s/m, N m s/rad] are diagonals in the slave's grip frame (linear first),
    the lumped compliance of fingers, grapple and structure. ``engaged``: closed at start.
    """

    slave: str
    payload: str
    stiffness: tuple = (2e4, 2e4, 2e4, 2e3, 2e3, 2e3)
    damping: tuple = (2e2, 2e2, 2e2, 2e1, 2e1, 2e1)
    engaged: bool = True

    def check(self, robots) -> None:
        by_ns = {r.ns: r for r in robots}
        if self.slave not in by_ns or by_ns[self.slave].payload != 'none':
            raise ConfigError(f'grip.slave {self.slave!r} must be a robot namespace whose payload is none')
        if self.payload not in by_ns or by_ns[self.payload].payload != 'client_mockup':
            raise ConfigError(f'grip.payload {self.payload!r} must be a robot namespace carrying a client mock-up')
        for name in ('stiffness', 'damping'):
            values = getattr(self, name)
            if len(values) != 6 or not all(math.isfinite(v) and v >= 0 for v in values):
                raise ConfigError(f'grip.{name} must be 6 finite values >= 0')


@dataclass(frozen=True)
class TwinConfig:
    robots: tuple = (RobotConfig('client'),)
    timestep: float = 0.001
    arm: ArmConfig = ArmConfig()
    press: PressConfig | None = None
    grip: GripConfig | None = None
    dock_target: DockTargetConfig | None = None

    def check(self) -> None:
        if not self.robots:
            raise ConfigError('robots: at least one robot is needed')
        names = [r.ns for r in self.robots]
        if len(set(names)) != len(names):
            raise ConfigError(f'robots: namespaces must be unique, got {names}')
        if not 0 < self.timestep <= 0.01:
            raise ConfigError('timestep must be in (0, 0.01] s')
        for robot in self.robots:
            robot.check()
        if self.arm.gripper is not None:
            self.arm.gripper.check('arm.gripper')
        if not self.arm.torque_loop_gain >= 0.0:
            raise ConfigError('arm.torque_loop_gain must be >= 0')
        if self.press is not None and self.press.target not in names:
            raise ConfigError(f'press.target {self.press.target!r} is not a robot namespace')
        if self.grip is not None:
            self.grip.check(self.robots)
        if self.dock_target is not None:
            self.dock_target.check()


def facility_config(client_kind: str = 'serial', with_servicer: bool = False, **client_kw) -> TwinConfig:
    """A facility like OOS-Sim: client table (UR10e on a pedestal, or the hexapod) and optionally the
    servicer robot (KR 120 R2500 pro carrying the light-weight arm) facing it."""
    robots = []
    if client_kind == 'serial':
        robots.append(RobotConfig('client', 'serial', 'ur10e', 'client_mockup', base_xyz=(2.6, 0.0, 0.5),
                                  base_rpy=(0.0, 0.0, math.pi), **client_kw))
    else:
        robots.append(RobotConfig('client', 'hexapod', 'hexapod', 'client_mockup', base_xyz=(2.6, 0.0, 0.0), **client_kw))
    if with_servicer:
        robots.append(RobotConfig('servicer', 'serial', 'kr120r2500pro', 'servicer_arm', base_xyz=(0.0, 0.0, 0.0)))
    return TwinConfig(robots=tuple(robots))


DEFAULT_ARMATURE = {'ur10e': (1.0, 1.0, 0.6, 0.2, 0.2, 0.2), 'kr120r2500pro': (40.0, 40.0, 20.0, 3.0, 3.0, 1.0)}
HEXAPOD_LEG_ARMATURE = 40.0  # kg, reflected ball-screw/motor inertia of a leg


@dataclass
class RobotBuild:
    """What the twin needs to drive one robot of the generated model."""

    ns: str
    kind: str
    joint_names: tuple            # names published in joint_states (no prefix)
    mj_joints: tuple              # MuJoCo joint names of the commanded joints
    flange_site: str
    base_pose: pin.SE3            # pose_base_in_world
    q_initial: np.ndarray
    q_offset: np.ndarray          # published position = qpos + q_offset (hexapod rest leg lengths)
    kinematics_spec: object
    ft_sensors: list = field(default_factory=list)
    arm_joints: tuple = ()        # torque-controlled arm (servicer), MuJoCo names
    arm_joint_names: tuple = ()
    arm_q_initial: np.ndarray | None = None
    pose_flange_in_world0: pin.SE3 | None = None


def _serial_initial(spec, robot: RobotConfig) -> np.ndarray:
    q = np.array(spec.q_home if robot.q_initial is None else robot.q_initial, dtype=float)
    if q.shape != (spec.dof,):
        raise ConfigError(f'robots[{robot.ns}].q_initial must have {spec.dof} values')
    return q


def build_scene(config: TwinConfig):
    """The MJCF string of the facility and the per-robot build information."""
    config.check()
    from hil_motion_table.kinematics import HexapodKinematics, SerialKinematics  # Pinocchio FK for the press rig

    world, equalities, actuators, sensors, builds = [], [], [], [], {}
    for robot in config.robots:
        ns = robot.ns
        base_rot = rpy_matrix(robot.base_rpy)
        base_pose = pin.SE3(base_rot, np.array(robot.base_xyz, dtype=float))
        world.append(f'<body name="{ns}_base" {mjcf.pose_attrs(robot.base_xyz, base_rot)}>')
        if robot.base_xyz[2] > 0:
            world.append(f'<geom name="{ns}_pedestal" type="cylinder" fromto="0 0 {-robot.base_xyz[2]:.6g} 0 0 0" '
                         'size="0.2" rgba="0.3 0.3 0.3 1" contype="0" conaffinity="0"/>')
        if robot.kind == 'serial':
            spec = SERIAL_ROBOTS[robot.model]()
            armature = robot.armature or DEFAULT_ARMATURE.get(robot.model, (1.0,) * spec.dof)
            chain = mjcf.chain_from_serial(spec, ns, armature)
            if np.linalg.norm(spec.joint_xyz[0]) > 0:  # the column up to the first joint
                world.append(mjcf.capsule(f'{ns}_column', spec.joint_xyz[0], spec.link_radius * 1.1, '0.3 0.3 0.3 1'))
            lines, depth = mjcf.open_chain(chain, '0.95 0.55 0.1 1' if 'kr' in spec.name else '0.6 0.7 0.8 1')
            world += lines
            flange_rot = rpy_matrix(spec.flange_rpy)
            world.append(f'<site name="{ns}_flange" {mjcf.pose_attrs(spec.flange_xyz, flange_rot)} size="0.01"/>')
            world.append(f'<body name="{ns}_tool" {mjcf.pose_attrs(spec.flange_xyz, flange_rot)}>')
            depth += 1
            q0 = _serial_initial(spec, robot)
            build = RobotBuild(ns, 'serial', tuple(spec.joint_names), tuple(c.joint for c in chain), f'{ns}_flange',
                               base_pose, q0, np.zeros(spec.dof), spec)
            kin = SerialKinematics(spec)
            pose_flange_in_base = kin.forward(q0)
        else:
            spec = hexapod_spec(name=ns)
            legs, platform, eqs, rest = mjcf.hexapod_bodies(spec, ns, HEXAPOD_LEG_ARMATURE)
            world += legs
            world.append('</body>')  # the platform is a free body of the world, not a child of the base
            world += platform
            depth = 1
            equalities += eqs
            kin = HexapodKinematics(spec)
            q0 = kin.q_home.copy()  # the hexapod always starts in its home pose
            build = RobotBuild(ns, 'hexapod', tuple(spec.joint_names), tuple(f'{ns}_{n}' for n in spec.joint_names),
                               f'{ns}_flange', base_pose, q0, np.array(rest), spec)
            pose_flange_in_base = kin.home_pose
            # the platform is a free body of the world: its pose is given in world coordinates
            world[-len(platform)] = (f'<body name="{ns}_platform" '
                                     f'{mjcf.pose_attrs((base_pose * kin.home_pose).translation, base_rot)}>')
        sensor = f'{ns}_ft'
        if robot.sensor_in_flange_xyz_rpy is None:
            sensor_lines, sensor_top = mjcf.ft_sensor_body(sensor, (0, 0, 0), None)
        else:  # the sensor's body sits SENSOR_HEIGHT_M below its measuring frame
            body = pose_from_xyz_rpy(robot.sensor_in_flange_xyz_rpy) * pin.SE3(np.eye(3), np.array([0, 0, -SENSOR_HEIGHT_M]))
            sensor_lines, sensor_top = mjcf.ft_sensor_body(sensor, body.translation, body.rotation)
        world += sensor_lines
        sensors += [f'<force name="{sensor}_force" site="{sensor}_site"/>',
                    f'<torque name="{sensor}_torque" site="{sensor}_site"/>']
        build.ft_sensors.append((sensor, robot.ft))
        if robot.payload == 'client_mockup' and robot.mockup is not None:
            m = robot.mockup
            world += mjcf.ring_mockup(ns, sensor, sensor_top, pose_from_xyz_rpy(m.pose_grasp_in_sensor_xyz_rpy),
                                      m.ring_radius_m, m.lip_thickness_m, m.lip_depth_m, m.segments, m.box_half_m,
                                      m.box_mass_kg, m.ring_mass_kg)
        elif robot.payload == 'client_mockup':
            world += mjcf.client_mockup(ns, sensor, sensor_top)
        elif robot.payload == 'servicer_arm':
            world += _servicer_arm(ns, sensor, sensor_top, config.arm, build, sensors, actuators, equalities)
        elif robot.payload == 'probe':
            pr = robot.probe or ProbeConfig()
            world += mjcf.probe_mockup(ns, sensor, sensor_top, pr.axis_in_sensor, pr.length_m, pr.tip_radius_m,
                                       pr.tip_mass_kg, pr.stiffness_n_m, pr.damping_ns_m, pr.contact_solref,
                                       pr.base_mass_kg)
        else:
            world.append(f'<body name="{ns}_payload" pos="{sensor_top}"><site name="{sensor}_site" size="0.01"/>'
                         '<geom type="sphere" size="0.02" mass="0.1" contype="0" conaffinity="0"/></body>')
        world.append('</body>')  # sensor body
        world += ['</body>'] * depth
        if robot.kind == 'serial':
            world.append('</body>')  # base
        for joint in build.mj_joints:
            actuators.append(f'<position name="{joint}_servo" joint="{joint}" kp="1" kv="0"/>')
        build.pose_flange_in_world0 = base_pose * pose_flange_in_base
        builds[ns] = build
    if config.dock_target is not None:
        t = config.dock_target
        world += mjcf.dock_target(t.face_xyz, t.face_normal, t.half_size_m)
    if config.press is not None:
        world += _press(config.press, builds[config.press.target])
        actuators.append('<motor name="press_force" joint="press_slide" gear="1"/>')
    parts = [
        '<mujoco model="hil_lab_twin">',
        '<compiler angle="radian" autolimits="true"/>',
        f'<option timestep="{config.timestep:.9g}" integrator="implicitfast" gravity="0 0 -9.81"/>',
        '<visual><global offwidth="1280" offheight="960"/><quality shadowsize="2048"/></visual>',
        '<asset><texture name="grid" type="2d" builtin="checker" rgb1="0.25 0.27 0.3" rgb2="0.3 0.32 0.35" '
        'width="256" height="256"/><material name="grid" texture="grid" texrepeat="8 8"/></asset>',
        '<worldbody>',
        '<light pos="1.5 -2 5" dir="0 0.3 -1" diffuse="0.8 0.8 0.8"/>',
        '<geom name="floor" type="plane" size="6 6 0.1" material="grid"/>',
        '<camera name="overview" pos="1.3 -5.6 3.4" xyaxes="1 0 0 0 0.4 0.916"/>',
        *world, '</worldbody>']
    for robot in config.robots:  # a camera looking at each robot
        x, y, _ = robot.base_xyz
        parts.insert(-1, f'<camera name="{robot.ns}_view" mode="targetbody" target="{robot.ns}_base" '
                         f'pos="{x - 1.6:.6g} {y - 2.4:.6g} 1.9"/>')
    if equalities:
        parts += ['<equality>', *equalities, '</equality>']
    parts += ['<actuator>', *actuators, '</actuator>', '<sensor>', *sensors, '</sensor>', '</mujoco>']
    return '\n'.join(parts), builds


def _servicer_arm(ns, sensor, sensor_top, arm_config: ArmConfig, build: RobotBuild, sensors, actuators,
                  equalities=None) -> list[str]:
    from hil_dynamics.models import lbr_iiwa14_arm

    arm = lbr_iiwa14_arm('lbr_')
    n = len(arm.joints)
    loop = 1.0 + arm_config.torque_loop_gain       # friction the link sees through the joint-torque loop
    chain = mjcf.chain_from_arm(arm, f'{ns}_arm', [arm_config.viscous_friction / loop] * n,
                                [arm_config.coulomb_friction / loop] * n, [arm_config.armature] * n)
    base = arm.base_link
    lines = [f'<body name="{ns}_arm_base" pos="{sensor_top}">',
             f'<site name="{sensor}_site" size="0.01" rgba="1 0 0 1"/>',
             mjcf.inertial(base.mass_kg, base.com_m, base.inertia_matrix()),
             mjcf.capsule(f'{ns}_arm_base_geom', arm.segment_ends_m[0], arm.link_radius_m, '0.9 0.9 0.9 1')]
    chain_lines, depth = mjcf.open_chain(chain, '0.9 0.9 0.9 1')
    lines += chain_lines
    flange = next(f for f in arm.frames if f.name == arm.ee_frame)
    wrist = f'{ns}_wrist_ft'
    wrist_lines, wrist_top = mjcf.ft_sensor_body(wrist, flange.xyz_m, rpy_matrix(flange.rpy_rad), mass=0.3,
                                                 radius=0.04, height=WRIST_SENSOR_HEIGHT_M)
    lines += wrist_lines
    grip = arm_config.gripper
    if grip is None:
        lines += mjcf.gripper(f'{ns}_arm', wrist, wrist_top)
    else:
        pose_tool_in_wrist = pin.SE3(np.eye(3), np.array([0.0, 0.0, -WRIST_SENSOR_HEIGHT_M])) * pose_from_xyz_rpy(
            grip.pose_tool_in_flange_xyz_rpy)
        lines += mjcf.ring_gripper(f'{ns}_arm', wrist, wrist_top, pose_tool_in_wrist, grip.open_half_m)
        # the two fingers move together (one drive, rack and pinion), so the closed gripper centres
        # itself on the lip and holds it stiffly along the closing axis too
        equalities.append(f'<joint name="{ns}_arm_finger_coupling" joint1="{ns}_arm_finger_left_joint" '
                          f'joint2="{ns}_arm_finger_right_joint" polycoef="0 1 0 0 0" solref="0.004 1"/>')
    lines.append('</body>')  # wrist sensor body
    lines += ['</body>'] * depth
    lines.append('</body>')  # arm base
    sensors += [f'<force name="{wrist}_force" site="{wrist}_site"/>', f'<torque name="{wrist}_torque" site="{wrist}_site"/>']
    build.ft_sensors.append((wrist, arm_config.wrist_ft))
    for link, joint in zip(chain, arm.joints):
        actuators.append(f'<motor name="{link.joint}_torque" joint="{link.joint}" gear="1"/>')
    for side in ('left', 'right'):
        if grip is None:
            actuators.append(f'<position name="{ns}_arm_finger_{side}_servo" joint="{ns}_arm_finger_{side}_joint" '
                             'kp="400" kv="20"/>')
        else:
            actuators.append(f'<position name="{ns}_arm_finger_{side}_servo" joint="{ns}_arm_finger_{side}_joint" '
                             f'kp="{grip.finger_stiffness_n_m:.9g}" forcerange="{-grip.grip_force_n:.9g} '
                             f'{grip.grip_force_n:.9g}"/>')
    build.arm_joints = tuple(c.joint for c in chain)
    build.arm_joint_names = tuple(j.name for j in arm.joints)
    build.arm_q_initial = np.array(arm_config.q_initial, dtype=float)
    return lines


def _press(press: PressConfig, build: RobotBuild) -> list[str]:
    """The pusher, aimed at the centre of the mock-up's +x side face (initial configuration)."""
    hx, hz = 0.15, 0.12  # mjcf.client_mockup defaults
    sensor_height = 0.04
    pose_mockup = build.pose_flange_in_world0 * pin.SE3(np.eye(3), np.array([0.0, 0.0, sensor_height]))
    face = pose_mockup.act(np.array([hx, 0.0, hz]))
    normal = pose_mockup.rotation[:, 0]
    push_axis = -normal
    start = face + normal * (press.radius + press.gap)
    x = np.cross([0.0, 0.0, 1.0], push_axis)
    if np.linalg.norm(x) < 1e-6:
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    rot = np.column_stack([x, np.cross(push_axis, x), push_axis])
    return [f'<body name="press" {mjcf.pose_attrs(start, rot)}>',
            '<joint name="press_slide" type="slide" axis="0 0 1" range="-0.05 0.1"/>',
            f'<geom name="press_tip" type="sphere" size="{press.radius:.6g}" mass="{press.mass:.6g}" condim="1" '
            'rgba="0.8 0.2 0.2 1"/>',
            f'<site name="press_tip_site" pos="0 0 {press.radius:.6g}" size="0.005"/>',
            '</body>']


# -- seed 001's HIL: a slave robot gripping the payload mock-up carried by the payload table --------
GRAPPLE_IN_MOCKUP_M = 0.27  # mjcf.client_mockup default: grapple (ring centre) above the sensor frame


def teleop_facility_config(slave_model: str = 'kr120r2500pro', payload_model: str = 'ur10e',
                           payload_flange_xyz=(0.95, 0.0, 0.3), servo: ServoConfig = ServoConfig(),
                           slave_ft: FtConfig = FtConfig(seed=11), payload_ft: FtConfig = FtConfig(seed=12),
                           grip: GripConfig | None = None, timestep: float = 0.001) -> TwinConfig:
    """Seed 001's HIL facility: robot ``slave`` (at the lab origin, F/T sensor at its flange, no
    tool) grips the grapple of the client mock-up on robot ``payload`` (base at x = 2.6 m, 0.5 m
    pedestal, facing the slave).

    The payload table holds the mock-up with the flange axis horizontal, pointing at the slave
    (flange at ``payload_flange_xyz`` in its base: z along the base x axis), so the grapple faces
    the slave; the slave's initial joints are solved (Pinocchio IK, the motion tables' kinematics)
    so that its F/T measuring frame sits on the grapple centre, facing it (sensor z along world
    +x). The two robots' initial configurations are therefore consistent with a closed grip.
    ``grip`` defaults to :class:`GripConfig` ``('slave', 'payload')``.
    """
    from hil_motion_table.kinematics import SerialKinematics

    if slave_model not in SERIAL_ROBOTS or payload_model not in SERIAL_ROBOTS:
        raise ConfigError(f'slave and payload robots must be serial models {sorted(SERIAL_ROBOTS)}')
    # flange axes in the payload base: z along +x_base, y along +y_base
    facing = np.column_stack([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    payload_base = pin.SE3(rpy_matrix((0.0, 0.0, math.pi)), np.array([2.6, 0.0, 0.5]))
    pose_flange_payload = pin.SE3(facing, np.array(payload_flange_xyz, dtype=float))
    q_payload = reachable_ik(SerialKinematics(SERIAL_ROBOTS[payload_model]()), pose_flange_payload,
                    (math.pi / 2, -math.pi / 2, 1.0, -math.pi / 2, math.pi / 2, 0.0), 'payload')
    pose_grapple = payload_base * pose_flange_payload * pin.SE3(
        np.eye(3), np.array([0.0, 0.0, SENSOR_HEIGHT_M + GRAPPLE_IN_MOCKUP_M]))
    # slave sensor frame on the grapple centre, z towards the payload table (world +x); slave base = world
    pose_sensor_slave = pin.SE3(facing, pose_grapple.translation)
    pose_flange_slave = pose_sensor_slave * pin.SE3(np.eye(3), np.array([0.0, 0.0, -SENSOR_HEIGHT_M]))
    slave_kin = SerialKinematics(SERIAL_ROBOTS[slave_model]())
    q_slave = reachable_ik(slave_kin, pose_flange_slave, slave_kin.q_home, 'slave')
    robots = (RobotConfig('slave', 'serial', slave_model, 'none', q_initial=tuple(q_slave), servo=servo, ft=slave_ft),
              RobotConfig('payload', 'serial', payload_model, 'client_mockup', base_xyz=(2.6, 0.0, 0.5),
                          base_rpy=(0.0, 0.0, math.pi), q_initial=tuple(q_payload), servo=servo, ft=payload_ft))
    return TwinConfig(robots=robots, timestep=timestep, grip=grip or GripConfig('slave', 'payload'))


def reachable_ik(kin, pose_flange_in_base, seed, who: str) -> np.ndarray:
    result = kin.inverse(pose_flange_in_base, np.asarray(seed, dtype=float))
    if not result.converged or np.any(result.q < kin.q_min) or np.any(result.q > kin.q_max):
        raise Unreachable(f'{who} robot cannot reach its initial grip pose {pose_flange_in_base.translation}')
    return result.q


# -- a whole TwinConfig as one YAML string (the lab_twin_node parameter of a calibrated facility) ------
def _tuples(value):
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


def config_to_yaml(config: TwinConfig) -> str:
    """``config`` as YAML (plain mappings and lists), for :func:`config_from_yaml`."""
    import dataclasses

    import yaml

    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (np.floating, np.integer)):
            return value.item()
        return value

    return yaml.safe_dump(plain(dataclasses.asdict(config)), sort_keys=True)


def config_from_yaml(text: str) -> TwinConfig:
    """The :class:`TwinConfig` written by :func:`config_to_yaml` (checked)."""
    import yaml

    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ConfigError('twin config YAML must be a mapping')

    def build(cls, values, nested):
        if values is None:
            return None
        values = {k: _tuples(v) for k, v in values.items()}
        for key, sub in nested.items():
            if key in values:
                values[key] = sub(values[key])
        return cls(**values)

    robot = lambda v: build(RobotConfig, v, {'servo': lambda s: build(ServoConfig, s, {}),  # noqa: E731
                                             'ft': lambda s: build(FtConfig, s, {}),
                                             'mockup': lambda s: build(RingMockupConfig, s, {}),
                                             'probe': lambda s: build(ProbeConfig, s, {})})
    config = build(TwinConfig, data, {
        'robots': lambda rs: tuple(robot(dict(r)) for r in rs),
        'arm': lambda a: build(ArmConfig, a, {'wrist_ft': lambda s: build(FtConfig, s, {}),
                                             'gripper': lambda s: build(RingGripperConfig, s, {})}),
        'press': lambda s: build(PressConfig, s, {}),
        'grip': lambda s: build(GripConfig, s, {}),
        'dock_target': lambda s: build(DockTargetConfig, s, {})})
    config.check()
    return config
