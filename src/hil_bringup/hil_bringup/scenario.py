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

__all__ = ['ClientScenario', 'MissionScenario', 'ScenarioError', 'client_admittance_parameters',
           'load_scenario', 'scenario_path']


def scenario_path(name: str) -> Path:
    """Path of a scenario shipped with hil_bringup (``envisat_capture`` -> .../scenarios/envisat_capture.yaml)."""
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory('hil_bringup')) / 'scenarios' / f'{name}.yaml')
    except Exception:  # noqa: BLE001 - not installed through ament: use the source tree
        pass
    candidates.append(Path(__file__).resolve().parents[1] / 'scenarios' / f'{name}.yaml')
    for path in candidates:
        if path.is_file():
            return path
    raise ScenarioError(f"scenario '{name}' not found (looked in: {', '.join(map(str, candidates))})")


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
class MissionScenario:
    name: str
    source: str
    client: ClientScenario
    workspace_box_m: np.ndarray
    admittance_hz: float
    demo: dict = field(default_factory=dict)


def _client(sec: Fields) -> ClientScenario:
    mass = sec.number('mass_kg', positive=True)
    raw = sec._raw('inertia_com_kgm2', None)
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


def load_scenario(path_or_name: str | Path) -> MissionScenario:
    """Load and validate a scenario file (a path, or the name of a shipped scenario)."""
    path = Path(path_or_name)
    if path.suffix not in ('.yaml', '.yml'):
        path = scenario_path(str(path_or_name))
    top = Fields.load(path)
    nominal = top.section('nominal')
    nominal.string('kind', choices=['unforced'])
    lab = top.section('lab')
    box = np.array(lab.vector('workspace_box_m', 3))
    if np.any(box <= 0):
        raise lab.error('workspace_box_m', f'every side must be > 0, got {box.tolist()}')
    rates = top.section('rates')
    demo = top.section('demo').data if top.has('demo') else {}
    return MissionScenario(
        name=top.string('scenario'),
        source=str(path),
        client=_client(top.section('client')),
        workspace_box_m=box,
        admittance_hz=rates.number('admittance_hz', min=1.0, max=10_000.0),
        demo=dict(demo),
    )


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
    }
