"""Mission scenarios: one YAML per mission, validated with errors that name the field.

A scenario is read by both runners (the ROS graph through the launch file or
:mod:`hil_bringup.demo`, and the lockstep runner) and turned into node parameters by
:func:`client_admittance_parameters`, so the YAML is the single source of truth.
Plain Python: no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from hil_common.fields import Fields, ScenarioError
from hil_dynamics.rigid_body import RigidBody
from hil_common.errors import ConfigError

__all__ = ['ClientScenario', 'MissionScenario', 'ScenarioError', 'ServicerScenario', 'client_admittance_parameters',
           'load_scenario', 'scenario_path']

ARMS = {'lbr_iiwa14': ('servicer_lbr_urdf', 'lbr_flange'), 'ssrms': ('servicer_ssrms_urdf', 'ssrms_lee_tip')}


def scenario_path(name: str) -> Path:
    """Path of a scenario shipped with hil_bringup (``envisat_capture`` -> .../scenarios/envisat_capture.yaml)."""
    from hil_common.fields import shipped_file

    return shipped_file('hil_bringup', 'scenarios', name, Path(__file__).resolve().parents[1], 'scenario')


def _pose(fields: Fields, key: str) -> pin.SE3:
    sec = fields.section(key)
    translation = sec.vector('translation_m', 3)
    rpy = sec.vector('rotation_rpy_rad', 3, default=[0.0, 0.0, 0.0])
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(translation))


@dataclass
class ClientScenario:
    """The client spacecraft: mass properties, initial tumble, grasp and sensor frames."""

    name: str
    body: RigidBody
    twist_client_body_0: np.ndarray
    pose_grasp_in_client: pin.SE3
    pose_sensor_in_client: pin.SE3


@dataclass
class ServicerScenario:
    """The servicer (base + arm), its gripper and its initial state relative to the client."""

    arm: str
    urdf: str
    ee_frame: str
    pose_tool_in_flange: pin.SE3
    pose_tool_at_grasp_in_grasp: pin.SE3
    pose_base_in_client_desired: pin.SE3
    pose_base_in_client_0: pin.SE3
    q_arm_0: np.ndarray


@dataclass
class MissionScenario:
    name: str
    source: str
    client: ClientScenario
    workspace_box_m: np.ndarray
    admittance_hz: float
    demo: dict = field(default_factory=dict)
    # Full-mission sections (None for a client-only file).
    servicer: ServicerScenario | None = None
    contact: object = None                 # hil_dynamics.contact.ContactParams
    obsw: object = None                    # hil_admittance.obsw.ObswGains
    obsw_hz: float = 1000.0
    servicer_workspace_box_m: np.ndarray | None = None
    pose_servicer_base_in_lab_0: pin.SE3 | None = None
    mission: dict = field(default_factory=dict)
    unforced_validation: object = None     # hil_bringup.runners.twin_validation.UnforcedValidation
    rebase: object = None                  # hil_dynamics.rebase.RebaseParams (None: no re-basing)
    passivity: object = None               # PassivityParams (None: observer off)


def _client(sec: Fields) -> ClientScenario:
    mass = sec.number('mass_kg', positive=True)
    raw = sec.raw('inertia_com_kgm2', None)
    if raw is None:
        raise sec.error('inertia_com_kgm2', 'is missing')
    try:
        inertia = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise sec.error('inertia_com_kgm2', f'expected 3 numbers or a 3x3 matrix ({exc})') from exc
    try:
        body = RigidBody(mass, inertia)
    except ValueError as exc:
        raise sec.error('inertia_com_kgm2', str(exc)) from exc
    return ClientScenario(
        name=sec.string('name', default='client'),
        body=body,
        twist_client_body_0=np.array(sec.vector('twist_client_body_0', 6)),
        pose_grasp_in_client=_pose(sec, 'pose_grasp_in_client'),
        pose_sensor_in_client=_pose(sec, 'pose_sensor_in_client'),
    )


def with_gripper(urdf: str, ee_frame: str, mass_kg: float, com_m, inertia_diag_kgm2) -> str:
    """The URDF with the gripper's mass on the (massless) EE link ``ee_frame``."""
    import re

    pattern = re.compile(rf'<link name="{re.escape(ee_frame)}">\s*</link>')
    if not pattern.search(urdf):
        raise ConfigError(f'link {ee_frame!r} not found empty in the URDF')
    ixx, iyy, izz = (float(v) for v in inertia_diag_kgm2)
    inertial = (f'<link name="{ee_frame}"><inertial><origin xyz="{com_m[0]} {com_m[1]} {com_m[2]}" rpy="0 0 0"/>'
                f'<mass value="{mass_kg}"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/>'
                '</inertial></link>')
    return pattern.sub(inertial, urdf, count=1)


def _servicer(sec: Fields) -> ServicerScenario:
    from hil_dynamics import models

    arm = sec.string('arm', choices=sorted(ARMS))
    mass = sec.number('base_mass_kg', positive=True)
    urdf_fn, ee_frame = ARMS[arm]
    urdf = getattr(models, urdf_fn)(models.BaseSpec(mass_kg=mass))
    grip = sec.section('gripper')
    try:
        urdf = with_gripper(urdf, ee_frame, grip.number('mass_kg', positive=True), grip.vector('com_in_flange_m', 3),
                            grip.vector('inertia_diag_kgm2', 3))
    except ValueError as exc:
        raise grip.error('mass_kg', str(exc)) from exc
    from hil_dynamics.servicer import ServicerModel

    n = ServicerModel(urdf, ee_frame).n
    desired = _pose(sec, 'pose_base_in_client_desired')
    q0 = np.array(sec.vector('q_arm_0_rad', n))
    return ServicerScenario(arm, urdf, ee_frame, _pose(sec, 'pose_tool_in_flange'),
                            _pose(sec, 'pose_tool_at_grasp_in_grasp'), desired,
                            desired * _pose(sec, 'initial_offset_in_base'), q0)


def _dataclass_from(sec: Fields, cls):
    """Build a parameter dataclass from a section: every field of ``cls`` is required and named on error."""
    import dataclasses

    values = {}
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if np.ndim(default) == 1:
            values[f.name] = np.array(sec.vector(f.name, len(default)))
        else:
            values[f.name] = sec.number(f.name, min=0.0)
    unknown = sorted(set(sec.data) - set(values))
    if unknown:
        raise sec.error(unknown[0], f'is not a known field (known: {sorted(values)})')
    try:
        return cls(**values)
    except ValueError as exc:
        raise ScenarioError(f"{sec.source}: field '{sec.prefix}': {exc}") from exc


#: The sections a mission scenario may have; any other top-level key is refused by name.
TOP_LEVEL_KEYS = ('scenario', 'client', 'nominal', 'servicer', 'contact', 'obsw', 'lab', 'rates', 'mission',
                  'unforced_validation', 'demo', 'rebase', 'passivity')


def load_scenario(path_or_name: str | Path) -> MissionScenario:
    """Load and validate a scenario file (a path, or the name of a shipped scenario)."""
    path = Path(path_or_name)
    if path.suffix not in ('.yaml', '.yml'):
        path = scenario_path(str(path_or_name))
    top = Fields.load(path)
    top.refuse_unknown(TOP_LEVEL_KEYS)
    nominal = top.section('nominal')
    nominal.string('kind', choices=['unforced'])
    lab = top.section('lab')
    box = np.array(lab.vector('workspace_box_m', 3))
    if np.any(box <= 0):
        raise lab.error('workspace_box_m', f'every side must be > 0, got {box.tolist()}')
    rates = top.section('rates')
    demo = top.section('demo').data if top.has('demo') else {}
    scenario = MissionScenario(
        name=top.string('scenario'),
        source=str(path),
        client=_client(top.section('client')),
        workspace_box_m=box,
        admittance_hz=rates.number('admittance_hz', min=1.0, max=10_000.0),
        demo=dict(demo),
    )
    if top.has('servicer'):
        from hil_admittance.obsw import ObswGains
        from hil_dynamics.contact import ContactParams

        scenario.servicer = _servicer(top.section('servicer'))
        scenario.contact = _dataclass_from(top.section('contact'), ContactParams)
        scenario.obsw = _dataclass_from(top.section('obsw'), ObswGains)
        scenario.obsw_hz = rates.number('obsw_hz', min=1.0, max=scenario.admittance_hz)
        ratio = scenario.admittance_hz / scenario.obsw_hz
        if abs(ratio - round(ratio)) > 1e-9:
            raise rates.error('obsw_hz', f'must divide admittance_hz ({scenario.admittance_hz}) a whole number of times')
        sbox = np.array(lab.vector('servicer_workspace_box_m', 3))
        if np.any(sbox <= 0):
            raise lab.error('servicer_workspace_box_m', f'every side must be > 0, got {sbox.tolist()}')
        scenario.servicer_workspace_box_m = sbox
        scenario.pose_servicer_base_in_lab_0 = _pose(lab, 'pose_servicer_base_in_lab_0')
        mission = top.section('mission')
        scenario.mission = {'duration_s': mission.number('duration_s', positive=True),
                            'unforced_duration_s': mission.number('unforced_duration_s', positive=True)}
        if top.has('rebase'):
            scenario.rebase = _rebase(top.section('rebase'))
        if top.has('passivity'):
            scenario.passivity = _passivity(top.section('passivity'))
        if top.has('unforced_validation'):
            scenario.unforced_validation = _unforced_validation(top.section('unforced_validation'))
    return scenario


def _rebase(sec: Fields):
    from hil_dynamics.rebase import RebaseParams

    unknown = sorted(set(sec.data) - {'enabled', 'after_post_grasp_s', 'ramp_s'})
    if unknown:
        raise sec.error(unknown[0], 'is not a known field (known: after_post_grasp_s, enabled, ramp_s)')
    enabled = sec.data.get('enabled', True)
    if not isinstance(enabled, bool):
        raise sec.error('enabled', f'expected true or false, got {enabled!r}')
    return RebaseParams(enabled, sec.number('after_post_grasp_s', min=0.0, max=600.0),
                        sec.number('ramp_s', positive=True, max=600.0))


@dataclass
class PassivityParams:
    """Passivity observer and controller of both admittances (hil_dynamics.passivity)."""

    enabled: bool = True
    max_rate_per_s: float = 100.0
    threshold_j: float = 0.0


def _passivity(sec: Fields) -> PassivityParams:
    unknown = sorted(set(sec.data) - {'enabled', 'max_rate_per_s', 'threshold_j'})
    if unknown:
        raise sec.error(unknown[0], 'is not a known field (known: enabled, max_rate_per_s, threshold_j)')
    enabled = sec.data.get('enabled', True)
    if not isinstance(enabled, bool):
        raise sec.error('enabled', f'expected true or false, got {enabled!r}')
    return PassivityParams(enabled, sec.number('max_rate_per_s', min=0.0, max=10_000.0),
                           sec.number('threshold_j', min=0.0))


def _unforced_validation(sec: Fields):
    from hil_bringup.runners.twin_validation import UnforcedValidation

    deadband = np.array(sec.vector('ft_deadband', 6))
    if np.any(deadband < 0):
        raise sec.error('ft_deadband', f'every width must be >= 0, got {deadband.tolist()}')
    return UnforcedValidation(
        twist_client_body_0=np.array(sec.vector('twist_client_body_0', 6)),
        pose_base_in_client_0=_pose(sec, 'pose_base_in_client_0'),
        duration_s=sec.number('duration_s', positive=True),
        arm_hold_bandwidth_rad_s=sec.number('arm_hold_bandwidth_rad_s', positive=True, max=100.0),
        ft_deadband=deadband,
        tare_s=sec.number('tare_s', positive=True, max=10.0))


def pose_arm_mount_in_base(urdf: str) -> pin.SE3:
    """``pose_arm_base_in_servicer_base``: the fixed ``*_mount`` joint of a servicer URDF
    (identity if the URDF has none)."""
    import re

    m = re.search(r'<joint name="[^"]*_mount" type="fixed">.*?<origin xyz="([^"]+)"(?: rpy="([^"]+)")?', urdf, re.S)
    if m is None:
        return pin.SE3.Identity()
    xyz = np.array([float(v) for v in m.group(1).split()])
    rpy = [float(v) for v in m.group(2).split()] if m.group(2) else [0.0, 0.0, 0.0]
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)


def _pose_params(g: pin.SE3) -> list[float]:
    return [*map(float, g.translation), *map(float, pin.rpy.matrixToRpy(g.rotation))]


def client_admittance_parameters(scenario: MissionScenario) -> dict:
    """ROS parameters of the client admittance node derived from a scenario."""
    c = scenario.client
    return {
        'mass_kg': c.body.mass_kg,
        'inertia_com_kgm2': [float(v) for v in c.body.inertia_com_kgm2.reshape(9)],
        'twist_client_body_0': [float(v) for v in c.twist_client_body_0],
        'pose_sensor_in_client_xyz_rpy': _pose_params(c.pose_sensor_in_client),
        'rate_hz': scenario.admittance_hz,
        **_passivity_parameters(scenario),
    }


def _passivity_parameters(scenario: MissionScenario) -> dict:
    """The admittance nodes' passivity parameters from the scenario's ``passivity`` section (none: node defaults)."""
    p = scenario.passivity
    return {} if p is None else {'passivity_control': bool(p.enabled), 'passivity_max_rate_per_s': p.max_rate_per_s}


def _servicer_initial(scenario: MissionScenario):
    """Seed 004 §III-C initial conditions with the client at the orbit origin (``g_n(0) = g_t(0) = I``)."""
    from hil_dynamics.servicer import servicer_initial_state

    return servicer_initial_state(pin.SE3.Identity(), scenario.client.twist_client_body_0,
                                  scenario.servicer.pose_base_in_client_0)


def pose_nominal_in_lab(scenario: MissionScenario) -> pin.SE3:
    """Where the lab realises the nominal frame: the servicer base starts at ``pose_servicer_base_in_lab_0``."""
    return scenario.pose_servicer_base_in_lab_0 * _servicer_initial(scenario).pose_base_in_nominal.inverse()


def servicer_admittance_parameters(scenario: MissionScenario, arm_compensates_gravity: bool = False) -> dict:
    """ROS parameters of the servicer admittance node derived from a scenario.

    ``arm_compensates_gravity``: the arm's torque interface already adds its own gravity
    compensation (the lab twin's arm, or an LBR iiwa in its torque mode with the load data
    set), so Eq. (22) is commanded without its ``-G`` term (``gravity_m_s2 = 0``); otherwise
    the two would add up to twice the gravity torque and throw the arm upwards.
    """
    c, s = scenario.client, scenario.servicer
    init = _servicer_initial(scenario)
    return {
        'gravity_m_s2': 0.0 if arm_compensates_gravity else 9.80665,
        'urdf_xml': s.urdf,
        'ee_frame': s.ee_frame,
        'nominal_mass_kg': c.body.mass_kg,
        'nominal_inertia_com_kgm2': [float(v) for v in c.body.inertia_com_kgm2.reshape(9)],
        'twist_nominal_body_0': [float(v) for v in c.twist_client_body_0],
        'pose_base_in_nominal_0_xyz_rpy': _pose_params(init.pose_base_in_nominal),
        'twist_base_rel_body_0': [float(v) for v in init.twist_base_rel_body],
        'pose_nominal_in_lab_xyz_rpy': _pose_params(pose_nominal_in_lab(scenario)),
        'rate_hz': scenario.admittance_hz,
        **_passivity_parameters(scenario),
        **_rebase_parameters(scenario),
    }


def _rebase_parameters(scenario: MissionScenario) -> dict:
    """The post-grasp re-basing (scenario section ``rebase``) for the servicer node, which plans it."""
    rebase = scenario.rebase
    if rebase is None or not rebase.enabled:
        return {'rebase_enabled': False}
    return {'rebase_enabled': True, 'rebase_after_post_grasp_s': float(rebase.after_post_grasp_s),
            'rebase_ramp_s': float(rebase.ramp_s)}


def obsw_parameters(scenario: MissionScenario) -> dict:
    """ROS parameters of the example OBSW controller node derived from a scenario."""
    import dataclasses

    s = scenario.servicer
    params = {
        'urdf_xml': s.urdf,
        'ee_frame': s.ee_frame,
        'pose_tool_in_flange_xyz_rpy': _pose_params(s.pose_tool_in_flange),
        'pose_grasp_in_client_xyz_rpy': _pose_params(scenario.client.pose_grasp_in_client),
        'pose_tool_at_grasp_in_grasp_xyz_rpy': _pose_params(s.pose_tool_at_grasp_in_grasp),
        'pose_base_in_client_desired_xyz_rpy': _pose_params(s.pose_base_in_client_desired),
        'q_hold': [float(v) for v in s.q_arm_0],
        'rate_hz': scenario.obsw_hz,
    }
    for f in dataclasses.fields(scenario.obsw):
        value = getattr(scenario.obsw, f.name)
        params[f'gains.{f.name}'] = [float(v) for v in value] if np.ndim(value) else float(value)
    return params
