"""The HIL snare graph (hil_snare.graph) and its lab twin with the wires (hil_snare.lab), without DDS.

* ``snare_capture.launch.py`` is installed and thin over :func:`hil_snare.graph.snare_graph`, the one
  definition the demo and the DDS test also start; every spec names an installed executable and
  its parameters are accepted by that node's own schema, for every argument combination;
* bad launch arguments are refused naming them;
* the twin puts the mock-ups at Table 3's relative pose, and the drift frame gives the relative
  motion of the lockstep runner (Galilean change of frame);
* the wire wrench the twin applies is what both F/T sensors measure.
"""

import ast
import importlib
import itertools
import os
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from ament_index_python.packages import get_package_prefix, get_package_share_directory

from hil_bringup.graphs import GraphError, resolve_arguments
from hil_common.params import validate
from hil_snare import lab
from hil_snare.graph import SNARE_ARGS, snare_graph, snare_mount
from hil_snare.runner import HtvCaptureConfig

LAUNCH = Path(__file__).resolve().parents[1] / 'launch' / 'snare_capture.launch.py'
SCHEMAS = {'snare_twin_node': 'hil_snare.snare_twin_node', 'snare_servicer_node': 'hil_snare.snare_servicer_node',
           'client_admittance_node': 'hil_admittance.client_admittance_node', 'ft_sensor_node': 'hil_sensors.ft_driver',
           'motion_table_node': 'hil_motion_table.motion_table_node'}
VARIANTS = [dict(zip(('use_sim', 'lab_clock'), c)) for c in itertools.product(('true', 'false'), ('auto', 'wall'))] + [
    {'use_sim': 'true', 'lab_clock': 'auto', 'mounts': 'false'},
    {'use_sim': 'true', 'lab_clock': 'auto', 'mounts': 'true', 'mount_stiffness_n_per_m': '20000'}]


def test_the_launch_file_is_installed_and_thin_over_the_one_graph_definition():
    share = Path(get_package_share_directory('hil_snare')) / 'launch' / LAUNCH.name
    assert share.read_text() == LAUNCH.read_text(), 'snare_capture.launch.py is not installed (run ./dev setup)'
    tree = ast.parse(LAUNCH.read_text())
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]
    assert not [c for c in calls if getattr(c.func, 'id', None) in ('Node', 'ExecuteProcess')]
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description')
    ret = fn.body[-1].value
    assert ret.func.id == 'graph_launch_description' and [a.id for a in ret.args] == ['SNARE_ARGS', 'snare_graph']


@pytest.mark.parametrize('given', VARIANTS, ids=str)
def test_every_node_resolves_and_accepts_its_parameters(given):
    graph = snare_graph(given)
    names = {n.fqn for n in graph.nodes}
    stack = {'/client/ft_sensor', '/servicer/ft_sensor', '/client/motion_table', '/servicer/motion_table',
             '/client_admittance', '/snare_servicer'}
    assert names == stack | ({'/lab_twin'} if given['use_sim'] == 'true' else set())
    for spec in graph.nodes:
        exe = Path(get_package_prefix(spec.package)) / 'lib' / spec.package / spec.executable
        assert exe.is_file() and os.access(exe, os.X_OK), f'{spec.fqn}: {exe} not found'
        schema = importlib.import_module(SCHEMAS[spec.executable]).PARAMS
        declared = {p.name for p in schema}
        assert set(spec.parameters) <= declared, f'{spec.fqn}: unknown {set(spec.parameters) - declared}'
        validate(schema, spec.parameters)
    if given['use_sim'] == 'true':
        twin = graph.node('/lab_twin').parameters
        for who in ('client', 'servicer'):    # each driver listens where the twin serves its sensor
            ft = graph.node(f'/{who}/ft_sensor').parameters
            assert f"{ft['sensor_frame']}:{ft['sensor_port']}" in twin['rdt_ports']
        assert graph.node('/client_admittance').parameters['wrench_frame_id'] == 'client_ft'
        # the twin's mounts are the graph's (what the live comparison's lockstep run steps)
        mount = snare_mount(resolve_arguments(SNARE_ARGS, given))
        assert twin['compliant_mounts'] is (given.get('mounts', 'true') == 'true') is (mount is not None)
        if mount is not None:
            assert (twin['mount_stiffness_n_per_m'], twin['mount_mass_kg'], twin['mount_damping_ratio']) == (
                mount.stiffness_n_per_m, mount.mass_kg, mount.damping_ratio)
            assert mount.stiffness_n_per_m == float(given.get('mount_stiffness_n_per_m', 50e3))


@pytest.mark.parametrize('given, named', [
    ({'scenario': 'jemrms_capture'}, 'scenario'), ({'client_ft_port': '49153'}, 'client_ft_port'),
    ({'use_sim': 'false', 'lab_clock': 'simulated'}, 'lab_clock'), ({'control_rate_hz': '5'}, 'control_rate_hz'),
    ({'wires': 'on'}, 'wires'), ({'scenario': 'htv_case_study'}, 'case study'), ({'mounts': 'yes'}, 'mounts'),
    ({'mount_stiffness_n_per_m': '10'}, 'mount_stiffness_n_per_m'),
])
def test_bad_launch_arguments_are_refused_naming_them(given, named):
    with pytest.raises(GraphError, match=named):
        snare_graph(given)


def test_the_twin_puts_the_mock_ups_at_table_3_and_the_drift_frame_gives_the_lockstep_relative_motion():
    from hil_lab_twin.twin import LabTwin

    cfg = HtvCaptureConfig()
    twin = LabTwin(lab.snare_twin_config(cfg))
    wires = lab.SnareWires(cfg)
    pose_lee, _, pose_gs, _ = wires.mockup_states(twin)
    rel = pose_lee.actInv(pose_gs * lab.pose_sensor_in_gf().inverse())       # GF frame in the LEE frame
    want = lab.pose_gf_in_lee(cfg)
    assert np.allclose(rel.translation, want.translation, atol=1e-9)
    assert np.allclose(rel.rotation, want.rotation, atol=1e-9)
    # the drift frame: the HTV at rest in it, the ISS (the SSRMS base, the held LEE) moving at -v. The GF
    # tip then moves in the LEE frame as in the lockstep run's free drift: rel_position + rel_velocity t
    from hil_snare.runner import build_htv_capture, relative_state

    system, _, poses, x = build_htv_capture(cfg)
    q, v_joints = system.split(x)[:2]
    pose_lee_iss, _ = system.lee_pose_and_twist(poses, q, v_joints)
    v = lab.drift_velocity_world(cfg)
    assert np.allclose(pose_lee_iss.rotation.T @ v, cfg.rel_velocity_mps, atol=1e-12)
    _, v_rel_lockstep, _ = relative_state(system, 0.0, poses, x)
    assert np.allclose(v_rel_lockstep, cfg.rel_velocity_mps, atol=1e-9)
    pose_gf_iss = pose_lee_iss * want
    for t in (0.5, 2.0):
        pose_lee_t, twist = lab.lee_in_drift_frame(pose_lee_iss, np.zeros(6), t, v)
        rel_t = pose_lee_t.actInv(pose_gf_iss)
        assert np.allclose(rel_t.translation, np.add(cfg.rel_position_m, np.multiply(cfg.rel_velocity_mps, t)), atol=1e-12)
        assert np.allclose(twist[:3], -np.asarray(cfg.rel_velocity_mps), atol=1e-12)


def test_both_ft_sensors_measure_the_wire_wrench_the_twin_applies():
    """The GF starts 3 mm inside a wire (wires held at 130 deg): once the robots have settled (1 s) both
    sensors' readings, less their tool's weight, are the applied wire wrench moved to the sensor
    (within 1 % + 0.02 N)."""
    from hil_lab_twin.scene import FtConfig
    from hil_lab_twin.twin import LabTwin

    cfg = HtvCaptureConfig()
    wires = lab.SnareWires(cfg)
    # a point 3 mm inside the wire nearest to Table 3's start, along its normal
    p_yz = np.array(cfg.rel_position_m[1:])
    hit = min(wires.system.wires.hits(wires.theta, p_yz, 1.0), key=lambda h: h.distance_m)
    inside = p_yz - (hit.distance_m - (wires.system.grapple.radius_m - 0.003)) * np.asarray(hit.normal_yz)
    quiet = FtConfig(noise_force_std=0.0, noise_torque_std=0.0)
    start = HtvCaptureConfig(rel_position_m=(cfg.rel_position_m[0], *inside), rel_attitude_deg=(0.0, 0.0, 0.0))
    twin = LabTwin(lab.snare_twin_config(start, lee_ft=quiet, gf_ft=quiet))
    import mujoco

    mass = {s: twin.model.body_mass[mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_BODY, s.replace('_ft', '_payload'))]
            for s in ('servicer_ft', 'client_ft')}             # the bare sensors' tool, its CoM on the site
    snare = lab.SnareLab(twin, wires)
    snare.step(1000)
    assert wires.normal_force_n.max() > 1.0 and np.count_nonzero(wires.normal_force_n) == 1
    w_gf = wires.wrench_on_gf_sensor                                             # on the GF, its sensor frame
    w_lee = lab.pose_sensor_in_lee().actInv(pin.Force(wires.wrench_on_lee)).vector   # on the LEE, its sensor frame
    pose_lee, _, pose_gs, _ = wires.mockup_states(twin)      # equal and opposite (poses one step later: 1e-4)
    assert np.allclose(pin.Force(w_gf).se3Action(pose_lee.actInv(pose_gs)).vector, -wires.wrench_on_lee, atol=1e-4)
    for sensor, applied in (('client_ft', w_gf), ('servicer_ft', w_lee)):
        r = twin.site_pose_in_world(f'{sensor}_site').rotation
        measured = twin.wrench_true(sensor) - np.concatenate([r.T @ [0.0, 0.0, -9.81 * mass[sensor]], np.zeros(3)])
        assert np.allclose(measured, applied, rtol=0.01, atol=0.02), (sensor, measured, applied)


def test_record_true_records_the_graph_s_topics():
    from hil_bringup.launch_common import record_command
    from hil_bringup.recorder_node import message_class

    graph = snare_graph()
    for _, type_name in graph.record_topics:
        message_class(type_name)                        # every recorded type exists
    topics = [t for t, _ in graph.record_topics]
    assert {'snare/twin_state', 'client/ft/wrench', 'servicer/ft/wrench', 'servicer/table/pose_cmd'} <= set(topics)
    assert record_command(graph, 'bag', ros2_available=True)['cmd'][-len(topics):] == topics
    spec = record_command(graph, 'bag', ros2_available=False)['node']
    assert spec.parameters['topics'] == topics
