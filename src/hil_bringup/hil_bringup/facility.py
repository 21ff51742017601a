"""The lab calibration: one facility YAML, validated with errors naming the field (issue 11, item 1).

A facility file (``hil_bringup/facilities/<name>.yaml``) describes the lab once:

* each robot's base pose in ``lab_world`` (``robots.<ns>.pose_base_in_lab``);
* each mock-up on its flange: the client F/T sensor and the grasp frame on the launch-adapter
  ring (``client_mockup``); the servicer F/T sensor with the arm's base bolted on it
  (``servicer_mockup``: the arm is carried by the servicer table, as in OOS-Sim);
* the pose of the nominal frame in ``lab_world`` (``pose_nominal_in_lab``);
* the gripper (closing time and force), the F/T drivers' dead band, the arm's torque interface.

With a mission scenario it gives the :class:`LabCalibration`: the constant poses every runner
needs (the client CoM and the servicer base CoM on their flanges, the nominal frame in each
robot's base), the tables' start joints (reach checked) and a collision check of the
mock-ups at start. From it come the twin's :class:`~hil_lab_twin.scene.TwinConfig`
(:func:`twin_config`) and the ROS nodes' parameters (:func:`client_table_parameters`,
:func:`servicer_table_parameters`, :func:`twin_node_parameters`,
:func:`ft_driver_parameters`, :func:`client_admittance_lab_parameters`), so the launch file,
the demo and the lockstep runners read the same numbers.

Both tables command their body's pose in the nominal frame (``command_frame: nominal``):
``pose_flange_in_base = pose_nominal_in_base g Y^-1`` with ``g`` the body's pose in the nominal
frame (seed 004 Eq. 11's ``g_c`` for the client CoM, Eq. 18's ``g_s`` for the servicer base)
and ``Y = pose_body_in_flange``. The relative pose of the mock-ups is then
``g_c^-1 g_s``, the simulated relative pose of Eq. (23) (``g_n`` cancels), up to the
tables' tracking error. Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from hil_common.fields import Fields, ScenarioError

__all__ = [
    'Facility', 'LabCalibration', 'calibrate', 'client_admittance_lab_parameters', 'client_body_in_flange',
    'client_table_parameters', 'facility_path', 'ft_driver_parameters', 'load_facility',
    'pose_wrist_sensor_in_flange', 'servicer_admittance_lab_parameters', 'servicer_body_in_flange', 'servicer_table_parameters',
    'twin_config', 'twin_node_parameters']

TABLE_MODELS = ('ur10e', 'kr120r2500pro')
TABLES = ('client', 'servicer')


def facility_path(name: str) -> Path:
    """Path of a facility shipped with hil_bringup (``envisat_lab`` -> .../facilities/envisat_lab.yaml)."""
    from hil_common.fields import shipped_file

    return shipped_file('hil_bringup', 'facilities', name, Path(__file__).resolve().parents[1], 'facility')


def _pose(fields: Fields, key: str) -> pin.SE3:
    sec = fields.section(key)
    unknown = sorted(set(sec.data) - {'translation_m', 'rotation_rpy_rad'})
    if unknown:
        raise sec.error(unknown[0], 'is not a known field (known: translation_m, rotation_rpy_rad)')
    rpy = sec.vector('rotation_rpy_rad', 3, default=[0.0, 0.0, 0.0])
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(sec.vector('translation_m', 3)))


def xyz_rpy(g: pin.SE3) -> list[float]:
    """``[x, y, z, roll, pitch, yaw]`` of a pose (the ``*_xyz_rpy`` parameter form)."""
    return [*map(float, g.translation), *map(float, pin.rpy.matrixToRpy(g.rotation))]


@dataclass
class Facility:
    """A validated facility file (see the module docstring); poses are ``pin.SE3``."""

    name: str
    source: str
    pose_nominal_in_lab: pin.SE3
    robot_models: dict                      # ns -> model name
    pose_base_in_lab: dict                  # ns -> pose of the robot's base in lab_world
    pose_client_sensor_in_flange: pin.SE3
    pose_grasp_in_sensor: pin.SE3
    ring: dict                              # ring_radius_m, lip_thickness_m, lip_depth_m, ring_segments, ...
    pose_servicer_sensor_in_flange: pin.SE3
    gripper: dict                           # open_half_m, closing_time_s, grip_force_n, finger_stiffness_n_m
    ft_deadband: np.ndarray
    arm_coulomb_friction_nm: float
    arm_torque_loop_gain: float


def _known(sec: Fields, keys) -> None:
    unknown = sorted(set(sec.data) - set(keys))
    if unknown:
        raise sec.error(unknown[0], f'is not a known field (known: {sorted(keys)})')


def load_facility(name_or_path: str | Path) -> Facility:
    """Load and validate a facility file (a path, or the name of a shipped facility)."""
    path = Path(name_or_path)
    if path.suffix not in ('.yaml', '.yml'):
        path = facility_path(str(name_or_path))
    top = Fields.load(path)
    _known(top, ('facility', 'pose_nominal_in_lab', 'robots', 'client_mockup', 'servicer_mockup', 'gripper', 'ft', 'arm'))
    robots = top.section('robots')
    _known(robots, TABLES)
    models, bases = {}, {}
    for ns in TABLES:
        sec = robots.section(ns)
        _known(sec, ('model', 'pose_base_in_lab'))
        models[ns] = sec.string('model', choices=TABLE_MODELS)
        bases[ns] = _pose(sec, 'pose_base_in_lab')
    cm = top.section('client_mockup')
    ring_keys = ('ring_radius_m', 'lip_thickness_m', 'lip_depth_m', 'ring_mass_kg', 'box_mass_kg')
    _known(cm, ('pose_sensor_in_flange', 'pose_grasp_in_sensor', 'ring_segments', 'box_half_m', *ring_keys))
    ring = {k: cm.number(k, positive=True) for k in ring_keys}
    ring['ring_segments'] = int(cm.number('ring_segments', min=8, max=128))
    ring['box_half_m'] = tuple(cm.vector('box_half_m', 3))
    if min(ring['box_half_m']) <= 0:
        raise cm.error('box_half_m', f'every half side must be > 0, got {list(ring["box_half_m"])}')
    if ring['lip_thickness_m'] >= ring['ring_radius_m']:
        raise cm.error('lip_thickness_m', f'must be below ring_radius_m ({ring["ring_radius_m"]})')
    sm = top.section('servicer_mockup')
    _known(sm, ('pose_sensor_in_flange',))
    gr = top.section('gripper')
    grip_keys = ('open_half_m', 'closing_time_s', 'grip_force_n', 'finger_stiffness_n_m')
    _known(gr, grip_keys)
    gripper = {k: gr.number(k, positive=True) for k in grip_keys}
    if gripper['open_half_m'] <= ring['lip_thickness_m'] / 2:
        raise gr.error('open_half_m', f'must exceed half the lip thickness ({ring["lip_thickness_m"] / 2} m)')
    ft = top.section('ft')
    _known(ft, ('deadband',))
    deadband = np.array(ft.vector('deadband', 6))
    if np.any(deadband < 0):
        raise ft.error('deadband', f'every width must be >= 0, got {deadband.tolist()}')
    arm = top.section('arm')
    _known(arm, ('coulomb_friction_nm', 'torque_loop_gain'))
    return Facility(
        name=top.string('facility'), source=str(path), pose_nominal_in_lab=_pose(top, 'pose_nominal_in_lab'),
        robot_models=models, pose_base_in_lab=bases,
        pose_client_sensor_in_flange=_pose(cm, 'pose_sensor_in_flange'), pose_grasp_in_sensor=_pose(cm, 'pose_grasp_in_sensor'),
        ring=ring, pose_servicer_sensor_in_flange=_pose(sm, 'pose_sensor_in_flange'), gripper=gripper,
        ft_deadband=deadband, arm_coulomb_friction_nm=arm.number('coulomb_friction_nm', min=0.0),
        arm_torque_loop_gain=arm.number('torque_loop_gain', min=0.0, max=1000.0))


@dataclass
class LabCalibration:
    """A facility with a mission scenario: every constant pose of the lab, and the tables' start joints.

    ``pose_body_in_flange[ns]``: the client CoM (``client``) and the servicer base CoM
    (``servicer``) seen from their table's flange; ``pose_nominal_in_base[ns]``: the nominal
    frame in each robot's base; ``pose_sensor_in_client``: the client F/T sensor relative to
    the client CoM (what the client admittance needs, seed 004 §III-A); ``q_table_0[ns]``:
    the tables' joints at ``t = 0`` (``g_c(0) = I``, ``g_s(0)`` the scenario's initial base
    pose in the nominal frame).
    """

    facility: Facility
    scenario: object
    pose_body_in_flange: dict
    pose_nominal_in_base: dict
    pose_sensor_in_client: pin.SE3
    pose_body_in_nominal_0: dict
    q_table_0: dict = field(default_factory=dict)

    def flange_target(self, ns: str, pose_body_in_nominal: pin.SE3) -> pin.SE3:
        """``pose_flange_in_base`` that puts table ``ns``'s body at ``pose_body_in_nominal``: what the
        motion-table node does with ``command_frame: nominal`` (the same two functions)."""
        from hil_motion_table.kinematics_helpers import flange_target_from_body_motion
        from hil_motion_table.table import home_for_nominal_frame

        y = self.pose_body_in_flange[ns]
        return flange_target_from_body_motion(home_for_nominal_frame(self.pose_nominal_in_base[ns], y), y,
                                              pose_body_in_nominal)

    def body_in_nominal(self, ns: str, pose_flange_in_base: pin.SE3) -> pin.SE3:
        """The inverse of :meth:`flange_target`: where a measured flange puts the body."""
        return self.pose_nominal_in_base[ns].actInv(pose_flange_in_base * self.pose_body_in_flange[ns])


def _initial_base_in_nominal(scenario) -> pin.SE3:
    from hil_dynamics.servicer import servicer_initial_state

    return servicer_initial_state(pin.SE3.Identity(), scenario.client.twist_client_body_0,
                                  scenario.servicer.pose_base_in_client_0).pose_base_in_nominal


def calibrate(facility: Facility, scenario, check: bool = True) -> LabCalibration:
    """The :class:`LabCalibration` of ``facility`` for ``scenario``.

    ``check``: refuse (``ScenarioError`` naming the field) a start pose a table cannot reach
    (IK not converged, joint limits, or within 0.02 of a singularity) and mock-ups in contact
    with each other or the floor at start (the twin's collision geometry).
    """
    from hil_bringup.scenario import pose_arm_mount_in_base

    if scenario.servicer is None:
        raise ScenarioError(f'scenario {scenario.name!r} has no servicer section: the facility needs both tables')
    grasp_in_client = scenario.client.pose_grasp_in_client
    pose_client_in_flange = facility.pose_client_sensor_in_flange * facility.pose_grasp_in_sensor * grasp_in_client.inverse()
    pose_base_in_flange = facility.pose_servicer_sensor_in_flange * pose_arm_mount_in_base(scenario.servicer.urdf).inverse()
    cal = LabCalibration(
        facility=facility, scenario=scenario,
        pose_body_in_flange={'client': pose_client_in_flange, 'servicer': pose_base_in_flange},
        pose_nominal_in_base={ns: facility.pose_base_in_lab[ns].actInv(facility.pose_nominal_in_lab) for ns in TABLES},
        pose_sensor_in_client=grasp_in_client * facility.pose_grasp_in_sensor.inverse(),
        pose_body_in_nominal_0={'client': pin.SE3.Identity(), 'servicer': _initial_base_in_nominal(scenario)})
    for ns in TABLES:
        cal.q_table_0[ns] = _reach(facility, ns, cal.flange_target(ns, cal.pose_body_in_nominal_0[ns]), check)
    if check:
        _check_collisions(cal)
    return cal


def _reach(facility: Facility, ns: str, pose_flange_in_base: pin.SE3, check: bool) -> np.ndarray:
    from hil_motion_table.kinematics_helpers import make_kinematics

    kin = make_kinematics(facility.robot_models[ns])
    seeds = [np.array(kin.q_home, dtype=float)]
    for k in range(1, 8):  # a few spread seeds: the IK is local
        seeds.append(seeds[0] + np.random.default_rng(k).uniform(-1.0, 1.0, kin.dof))
    best = None
    for seed in seeds:
        result = kin.inverse(pose_flange_in_base, seed)
        ok = result.converged and np.all(result.q >= kin.q_min) and np.all(result.q <= kin.q_max)
        if ok and result.sigma_min >= 0.02:
            return result.q
        best = best or result
    if check:
        where = f"robots.{ns}.pose_base_in_lab"
        raise ScenarioError(f"{facility.source}: field '{where}': the {ns} table ({facility.robot_models[ns]}) cannot "
                            f'reach its start pose: flange at {np.round(pose_flange_in_base.translation, 3).tolist()} m '
                            f'in its base (IK residual {best.error:.3g}, sigma_min {best.sigma_min:.3g})')
    return best.q


def _check_collisions(cal: LabCalibration) -> None:
    import mujoco

    from hil_lab_twin.twin import LabTwin

    twin = LabTwin(twin_config(cal))
    m, d = twin.model, twin.data
    mujoco.mj_forward(m, d)
    for i in range(d.ncon):
        c = d.contact[i]
        if c.dist > 0:
            continue
        names = sorted(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or '?' for g in (c.geom1, c.geom2))
        field_name = 'pose_nominal_in_lab' if 'floor' in names else 'client_mockup'
        raise ScenarioError(f"{cal.facility.source}: field '{field_name}': at start, {names[0]} and {names[1]} are in "
                            f'contact (penetration {-c.dist * 1000:.1f} mm): the mock-ups must start apart')


# -- what the twin and the nodes are built from --------------------------------------------------------
def twin_config(cal: LabCalibration, servo=None, ft=None, wrist_ft=None, timestep: float = 0.001):
    """The twin's :class:`~hil_lab_twin.scene.TwinConfig` of the calibrated facility (tables at their
    start joints, the arm at the scenario's ``q_arm_0``, the ring mock-up and the ring gripper)."""
    from hil_lab_twin.scene import (ArmConfig, FtConfig, RingGripperConfig, RingMockupConfig, RobotConfig, ServoConfig,
                                    TwinConfig)

    f, s = cal.facility, cal.scenario
    servo = servo or ServoConfig()
    mockup = RingMockupConfig(
        pose_grasp_in_sensor_xyz_rpy=tuple(xyz_rpy(f.pose_grasp_in_sensor)), ring_radius_m=f.ring['ring_radius_m'],
        lip_thickness_m=f.ring['lip_thickness_m'], lip_depth_m=f.ring['lip_depth_m'], segments=f.ring['ring_segments'],
        box_half_m=f.ring['box_half_m'], box_mass_kg=f.ring['box_mass_kg'], ring_mass_kg=f.ring['ring_mass_kg'])
    robots = []
    for k, ns in enumerate(TABLES):
        base = f.pose_base_in_lab[ns]
        sensor = f.pose_client_sensor_in_flange if ns == 'client' else f.pose_servicer_sensor_in_flange
        robots.append(RobotConfig(
            ns, 'serial', f.robot_models[ns], 'client_mockup' if ns == 'client' else 'servicer_arm',
            base_xyz=tuple(map(float, base.translation)), base_rpy=tuple(map(float, pin.rpy.matrixToRpy(base.rotation))),
            q_initial=tuple(map(float, cal.q_table_0[ns])), servo=servo, ft=ft or FtConfig(seed=11 + k),
            mockup=mockup if ns == 'client' else None, sensor_in_flange_xyz_rpy=tuple(xyz_rpy(sensor))))
    gripper = RingGripperConfig(pose_tool_in_flange_xyz_rpy=tuple(xyz_rpy(s.servicer.pose_tool_in_flange)),
                                **{k: float(v) for k, v in f.gripper.items()})
    arm = ArmConfig(q_initial=tuple(map(float, s.servicer.q_arm_0)), wrist_ft=wrist_ft or FtConfig(seed=7),
                    gripper=gripper, coulomb_friction=f.arm_coulomb_friction_nm,
                    torque_loop_gain=f.arm_torque_loop_gain)
    return TwinConfig(robots=tuple(robots), timestep=timestep, arm=arm)


def client_body_in_flange(facility: Facility, scenario) -> list[float]:
    """``pose_body_in_flange_xyz_rpy`` of the client table: the client CoM seen from its flange
    (replaces ``envisat_demo.client_body_in_flange``)."""
    return xyz_rpy(calibrate(facility, scenario, check=False).pose_body_in_flange['client'])


def servicer_body_in_flange(facility: Facility, scenario) -> list[float]:
    """``pose_body_in_flange_xyz_rpy`` of the servicer table: the servicer base CoM seen from its
    flange, which carries the servicer F/T sensor and the arm (replaces ``envisat_demo.servicer_body_in_flange``)."""
    return xyz_rpy(calibrate(facility, scenario, check=False).pose_body_in_flange['servicer'])


def _table_parameters(cal: LabCalibration, ns: str) -> dict:
    return {'robot': cal.facility.robot_models[ns], 'command_frame': 'nominal',
            'pose_body_in_flange_xyz_rpy': xyz_rpy(cal.pose_body_in_flange[ns]),
            'pose_nominal_in_base_xyz_rpy': xyz_rpy(cal.pose_nominal_in_base[ns])}


def client_table_parameters(facility: Facility, scenario) -> dict:
    """Motion-table parameters of the client table (``motion_table_node`` or ``client_hot_path_node``):
    it commands the client CoM's pose ``g_c`` in the nominal frame (seed 004 Eq. 11)."""
    return _table_parameters(calibrate(facility, scenario), 'client')


def servicer_table_parameters(facility: Facility, scenario) -> dict:
    """Motion-table parameters of the servicer table: it commands the servicer base CoM's pose in the
    nominal frame (seed 004 Eq. 18; the servicer admittance node with ``table_pose_from_start: false``)."""
    return _table_parameters(calibrate(facility, scenario), 'servicer')


def client_admittance_lab_parameters(facility: Facility, scenario) -> dict:
    """Overrides of the client admittance's parameters from the calibration: where the client F/T
    sensor is relative to the client CoM (the sensor sits on the mock-up, the grasp frame on its ring)."""
    return {'pose_sensor_in_client_xyz_rpy': xyz_rpy(calibrate(facility, scenario, check=False).pose_sensor_in_client)}


def pose_wrist_sensor_in_flange() -> pin.SE3:
    """The wrist F/T sensor's measuring frame on the arm's flange (the URDF EE frame): the sensor puck
    between the flange and the gripper, as the twin builds it (``hil_lab_twin.scene.WRIST_SENSOR_HEIGHT_M``)."""
    from hil_lab_twin.scene import WRIST_SENSOR_HEIGHT_M

    return pin.SE3(np.eye(3), np.array([0.0, 0.0, WRIST_SENSOR_HEIGHT_M]))


def servicer_admittance_lab_parameters(facility: Facility) -> dict:
    """Overrides of the servicer admittance's parameters from the calibration: where the lab realises the
    nominal frame (the gravity of the ground arm, seed 004 Eq. 20), its table commands the base's
    pose in that frame (not relative to its start), and where the wrist sensor measures (the wrench
    moved to the flange, Eq. 18's ``F_e``)."""
    return {'pose_nominal_in_lab_xyz_rpy': xyz_rpy(facility.pose_nominal_in_lab), 'table_pose_from_start': False,
            'pose_sensor_in_ee_xyz_rpy': xyz_rpy(pose_wrist_sensor_in_flange())}


def ft_driver_parameters(facility: Facility) -> dict:
    """The F/T drivers' dead band (replaces ``envisat_demo.FT_DEADBAND``)."""
    return {'deadband.enabled': bool(np.any(facility.ft_deadband > 0)),
            'deadband.widths': [float(v) for v in facility.ft_deadband]}


#: The twin's sensors and the bodies hanging from them (their weight is compensated by the drivers).
FT_TOOLS = {'client': ('client_ft', 'client_mockup'), 'servicer': ('servicer_wrist_ft', 'servicer_arm_gripper')}


def ft_gravity_parameters(cal: LabCalibration) -> dict:
    """``{table: F/T driver parameters}`` compensating the weight of what hangs from each sensor (the client
    mock-up, the gripper): mass and CoM in the sensor frame identified on the twin's model, as a lab
    identifies its tools, and the sensor's orientation read from ``<sensor>/sensor_pose`` in ``lab_world``."""
    import mujoco

    from hil_bringup.runners.twin_validation import TWIN_GRAVITY_M_S2
    from hil_lab_twin.twin import LabTwin

    twin = LabTwin(twin_config(cal))
    out = {}
    try:
        for ns, (sensor, body_name) in FT_TOOLS.items():
            body = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_BODY, body_name)
            com = twin.site_pose_in_world(f'{sensor}_site').actInv(np.array(twin.data.subtree_com[body]))
            out[ns] = {'gravity_compensation.enabled': True,
                       'gravity_compensation.tool_mass_kg': float(twin.model.body_subtreemass[body]),
                       'gravity_compensation.tool_com_m': [float(v) for v in com],
                       'gravity_compensation.gravity_mps2': [0.0, 0.0, -TWIN_GRAVITY_M_S2],
                       'gravity_compensation.sensor_in_flange_xyzw': [0.0, 0.0, 0.0, 1.0],
                       'gravity_compensation.pose_topic': f'/{sensor}/sensor_pose'}
    finally:
        twin.close()
    return out


def twin_node_parameters(facility: Facility, scenario, rdt_ports: dict | None = None) -> dict:
    """Parameters of ``lab_twin_node`` (``layout: config``): the whole calibrated twin as one YAML
    string (:func:`hil_lab_twin.scene.config_to_yaml`), plus the RDT ports ``{sensor: port}``."""
    from hil_lab_twin.scene import config_to_yaml

    ports = rdt_ports or {}
    return {'layout': 'config', 'twin_config_yaml': config_to_yaml(twin_config(calibrate(facility, scenario))),
            'rdt_ports': [f'{k}:{v}' for k, v in ports.items()]}
