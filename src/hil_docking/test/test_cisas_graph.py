"""``cisas_docking.launch.py`` is thin over one graph definition (hil_docking.graph.cisas_graph).

The same checks ``hil_bringup/test/test_launch_files.py`` runs on the graphs of hil_bringup
(launch/launch_ros are not installable here, so the launch file is checked statically): the
launch file is installed and only hands the graph to ``graph_launch_description``; every node
resolves to its executable and accepts its parameters by its own schema; ``record:=true``
records the graph's topics; bad arguments and an unstable scenario are refused by name.
"""

import ast
import importlib
import os
from pathlib import Path

import pytest
import yaml
from ament_index_python.packages import get_package_prefix, get_package_share_directory

from hil_bringup import graphs
from hil_bringup.graphs import GraphError
from hil_common.fields import ScenarioError
from hil_common.params import validate
from hil_docking.graph import CISAS_ARGS, cisas_graph
from hil_docking.scenario import scenario_path

LAUNCH = Path(__file__).resolve().parents[1] / 'launch' / 'cisas_docking.launch.py'
SCHEMAS = {'facility_emulator_node': 'hil_docking.facility_emulator_node',
           'docking_facility_node': 'hil_docking.docking_facility_node',
           'ft_sensor_node': 'hil_sensors.ft_driver', 'motion_table_node': 'hil_motion_table.motion_table_node',
           'mockup_pose_node': 'hil_docking.mockup_pose_node',
           'lab_twin_node': 'hil_lab_twin.lab_twin_node',
           'recorder_node': 'hil_bringup.recorder_node'}


def schema(executable):
    return importlib.import_module(SCHEMAS[executable]).PARAMS


def test_the_launch_file_is_installed_and_thin_over_the_graph():
    installed = Path(get_package_share_directory('hil_docking')) / 'launch' / LAUNCH.name
    assert installed.read_text() == LAUNCH.read_text(), 'cisas_docking.launch.py is not installed (run ./dev setup)'
    tree = ast.parse(LAUNCH.read_text())
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]
    assert not [c for c in calls if getattr(c.func, 'id', None) in ('Node', 'ExecuteProcess')]
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description')
    ret = fn.body[-1].value
    assert ret.func.id == 'graph_launch_description' and [a.id for a in ret.args] == ['CISAS_ARGS', 'cisas_graph']
    # what launch declares: the graph's arguments plus the record arguments launch_common reads
    assert {'record', 'bag_path'} <= {a.name for a in CISAS_ARGS}


@pytest.mark.parametrize('given', [{}, {'compensation': 'none'}, {'compensation': 'first_order', 'pose_timeout_s': '0.5'},
                                   {'lab': 'cisas'}, {'lab': 'twin', 'servo_bandwidth_hz': '20'}], ids=str)
def test_every_node_resolves_like_launch_ros_and_accepts_its_parameters(given):
    graph = cisas_graph(given)
    if given.get('lab') == 'cisas':
        assert [s.label for s in graph.stages] == ['io', 'stack']
        assert {n.fqn for n in graph.nodes} == {'/chaser/ft_sensor', '/chaser/motion_table', '/chaser/mockup_pose',
                                                '/docking_facility'}
        assert 'max_catch_up' not in graph.node('/docking_facility').parameters     # the real lab drops steps
    elif given.get('lab') == 'twin':
        assert [s.label for s in graph.stages] == ['lab', 'io', 'stack']
        assert {n.fqn for n in graph.nodes} == {'/lab_twin', '/chaser/ft_sensor', '/chaser/motion_table',
                                                '/chaser/mockup_pose', '/docking_facility'}
        assert all(n.use_sim_time for n in graph.nodes if n.fqn != '/lab_twin')     # the twin's clock
        assert graph.node('/lab_twin').parameters['rdt_ports'] == ['chaser_ft:49152']
        assert 'bandwidth_hz: 20.0' in graph.node('/lab_twin').parameters['twin_config_yaml']
    else:
        assert [s.label for s in graph.stages] == ['lab', 'stack']
        assert {n.fqn for n in graph.nodes} == {'/facility_emulator', '/docking_facility'}
    for spec in graph.nodes:
        exe = Path(get_package_prefix(spec.package)) / 'lib' / spec.package / spec.executable
        assert exe.is_file() and os.access(exe, os.X_OK), f'{spec.fqn}: {exe} not found'
        declared = {p.name for p in schema(spec.executable)}
        assert set(spec.parameters) <= declared, f'{spec.fqn}: unknown {set(spec.parameters) - declared}'
        validate(schema(spec.executable), spec.parameters)
        kwargs = spec.launch_kwargs()
        assert yaml.safe_load(spec.params_yaml()) == {spec.fqn: {'ros__parameters': graphs._plain(kwargs['parameters'][0])}}
        assert spec.ros_arguments('p.yaml')[:3] == ['--ros-args', '-r', f'__node:={kwargs["name"]}']
    # the nodes read the one scenario file
    files = {n.parameters['scenario_file'] for n in graph.nodes if 'scenario_file' in n.parameters}
    assert len(files) == 1 and Path(files.pop()).read_text() == scenario_path().read_text()
    assert graph.node('/docking_facility').parameters['compensation'] == given.get('compensation', '')


def test_record_true_records_the_graph_s_topics():
    from hil_bringup.launch_common import record_command
    from hil_bringup.recorder_node import message_class

    graph = cisas_graph()
    topics = [t for t, _ in graph.record_topics]
    assert {'chaser/pose_cmd', 'facility/robot_pose_lvlh', 'facility/ft/wrench', 'facility/virtual_wrench',
            'facility/status'} <= set(topics)
    for _, type_name in graph.record_topics:
        message_class(type_name)
    cmd = record_command(graph, 'bag', ros2_available=True)['cmd']
    assert cmd[:3] == ['ros2', 'bag', 'record'] and cmd[-len(topics):] == topics
    spec = record_command(graph, 'bag', ros2_available=False)['node']
    validate(schema(spec.executable), spec.parameters)


@pytest.mark.parametrize('given, named', [
    ({'lab': 'lab'}, 'lab'), ({'lab': 'cisas', 'ft_port': '0'}, 'ft_port'),
    ({'lab': 'twin', 'servo_bandwidth_hz': '0'}, 'servo_bandwidth_hz'), ({'compensation': 'magic'}, 'compensation'),
    ({'pose_timeout_s': 'soon'}, 'pose_timeout_s'),
    ({'scenario': 'no_such_scenario'}, 'scenario'), ({'scenarios': 'x'}, 'scenarios'),
])
def test_bad_launch_arguments_are_refused_naming_them(given, named):
    with pytest.raises(GraphError, match=named):
        cisas_graph(given)


def test_a_bad_or_unstable_scenario_is_refused_before_anything_starts(tmp_path):
    text = scenario_path().read_text()
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text.replace('chaser_mass_kg: 100.0', 'chaser_mass_kg: -1.0'))
    with pytest.raises(ScenarioError, match='spacecraft.chaser_mass_kg'):
        cisas_graph({'scenario': str(bad)})
    # 0.8 kg equivalent mass with eps = k Delta: below the exact-delay minimum of the applied law
    # (k' = 5000 N/m, b' = 152.5 N s/m at 10.5 ms: 1.26 kg), refused by the designer at graph build
    light = tmp_path / 'light.yaml'
    light.write_text(text.replace('chaser_mass_kg: 100.0', 'chaser_mass_kg: 0.8').replace('target_mass_kg: 300.0',
                                                                                          'target_mass_kg: 1000000000.0'))
    with pytest.raises(ValueError, match='below the stable minimum 1.259 kg'):
        cisas_graph({'scenario': str(light), 'compensation': 'first_order'})


def test_the_cisas_lab_s_table_and_pose_nodes_put_the_mock_up_where_the_docking_node_commands(tmp_path):
    """``lab:=cisas`` without the lab: its motion table and mock-up pose nodes, with the graph's parameters,
    and an ideal arm (its joint states are the commands). A command ``dr`` on ``chaser/pose_cmd`` (as the
    docking node sends, identity orientation) comes back on ``facility/robot_pose_lvlh`` as ``dr`` (to the
    IK's tolerance), the flange pointing as at home."""
    import numpy as np
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from hil_common.conversions import pose_from_msg
    from hil_common.ros_testing import spin_until, start_node, stop_process, test_node
    from hil_docking.scenario import load_docking_scenario
    from hil_motion_table.kinematics_helpers import make_kinematics

    graph = cisas_graph({'lab': 'cisas'})
    kin = make_kinematics('cisas')
    procs = []
    for fqn in ('/chaser/motion_table', '/chaser/mockup_pose'):
        spec = graph.node(fqn)
        params = tmp_path / f'{spec.name}.yaml'
        params.write_text(spec.params_yaml())
        procs.append(start_node(spec.package, spec.executable, ros_args=tuple(spec.ros_arguments(str(params))[1:])))
    dr = np.array(load_docking_scenario(None).start_lvlh_m) * 0.5
    try:
        with test_node('cisas_lab_probe') as (node, executor):
            measured = []
            js = JointState(name=list(kin.joint_names), position=[float(v) for v in kin.spec.q_home])

            def on_command(msg):                  # the ideal arm: at the command at once
                js.position = list(msg.data)
            node.create_subscription(Float64MultiArray, '/chaser/forward_position_controller/commands', on_command, 100)
            node.create_subscription(PoseStamped, '/facility/robot_pose_lvlh', measured.append, 100)
            pub_js = node.create_publisher(JointState, '/chaser/joint_states', 10)
            pub_cmd = node.create_publisher(PoseStamped, '/chaser/pose_cmd', 10)
            cmd = PoseStamped()
            cmd.header.frame_id = 'target_lvlh'
            cmd.pose.position.x, cmd.pose.position.y, cmd.pose.position.z = map(float, dr)
            cmd.pose.orientation.w = 1.0

            def tick():
                js.header.stamp = node.get_clock().now().to_msg()
                pub_js.publish(js)
                cmd.header.stamp = js.header.stamp
                pub_cmd.publish(cmd)
            node.create_timer(0.01, tick)

            home = kin.forward(kin.spec.q_home).rotation

            def arrived():          # there, and turned back to its home orientation (the IK settles both; once, in
                # a fresh-clone suite, the position was there first, the orientation 1.5e-6 rad off)
                if not measured:
                    return False
                pose = pose_from_msg(measured[-1].pose)
                return np.linalg.norm(pose.translation - dr) < 1e-6 and np.allclose(pose.rotation, home, atol=1e-6)
            ok = spin_until(executor, arrived, 30.0)      # the table's speed limits take it there in steps
            last = pose_from_msg(measured[-1].pose) if measured else None
        alive = [p.poll() is None for p in procs]
    finally:
        outs = [stop_process(p) for p in procs]
    assert all(alive), outs
    assert ok, (None if last is None else last.translation, dr, outs[0][-1500:])
    assert np.allclose(last.rotation, kin.forward(kin.spec.q_home).rotation, atol=1e-6), last.rotation
