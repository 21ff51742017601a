"""Each graph is defined once (hil_bringup.graphs); the launch files are thin over it.

launch/launch_ros are not installable here, so the launch files are checked statically: they
declare a graph's arguments and hand the graph to ``launch_common.graph_launch_description``,
which makes each node ``Node(**spec.launch_kwargs())``. The graphs themselves are checked
against the real executables and every node's own parameter schema, for every argument
combination. The demo and the DDS tests start the same :class:`~hil_bringup.graphs.Graph`
(test_envisat_live_graph.py checks that the running nodes carry exactly these parameters).
"""

import ast
import importlib
import itertools
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from ament_index_python.packages import get_package_prefix, get_package_share_directory

from hil_bringup import graphs
from hil_bringup.graphs import GraphError, Ready, ReadyMonitor
from hil_common.params import validate

LAUNCH_DIR = Path(__file__).resolve().parents[1] / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*.launch.py'))
#: Where each executable's parameter schema lives.
SCHEMAS = {
    'client_hot_path_node': 'hil_bringup.client_hot_path_node', 'scripted_wrench_node': 'hil_bringup.scripted_wrench_node',
    'servicer_hot_path_node': 'hil_bringup.servicer_hot_path_node',
    'client_admittance_node': 'hil_admittance.client_admittance_node',
    'servicer_admittance_node': 'hil_admittance.servicer_admittance_node',
    'obsw_controller_node': 'hil_admittance.obsw_controller_node', 'lab_twin_node': 'hil_lab_twin.lab_twin_node',
    'ft_sensor_node': 'hil_sensors.ft_driver', 'motion_table_node': 'hil_motion_table.motion_table_node',
    'teleop_master_node': 'hil_teleop.teleop_master_node', 'delay_line_node': 'hil_teleop.delay_line_node',
    'slave_law_node': 'hil_teleop.slave_law_node', 'grip_contact_node': 'hil_teleop.grip_contact_node',
    'live_view_node': 'hil_bringup.live_view_node', 'recorder_node': 'hil_bringup.recorder_node',
}
#: Every combination of the arguments that change the node set.
VARIANTS = [('envisat_capture', dict(zip(('use_sim', 'hot_path', 'servicer_hot_path'), combo)))
            for combo in itertools.product(('true', 'false'), ('fused', 'nodes'), ('fused', 'nodes'))] + \
           [('massive_payload_teleop', {'sim': sim}) for sim in ('true', 'contact', 'false')] + \
           [('client_admittance', {'scripted_wrench': w}) for w in ('true', 'false')]


def schema(executable):
    module = importlib.import_module(SCHEMAS[executable])
    return module.PARAMS


def build(name, given):
    return graphs.GRAPHS[name][1](given)


def test_launch_files_are_installed_and_thin_over_one_graph_definition():
    share = Path(get_package_share_directory('hil_bringup')) / 'launch'
    builders = {'envisat_capture': ('ENVISAT_ARGS', 'envisat_graph'),
                'massive_payload_teleop': ('TELEOP_ARGS', 'teleop_graph'),
                'client_admittance': ('CLIENT_ARGS', 'client_graph')}
    assert sorted(p.name for p in LAUNCH_FILES) == sorted(f'{n}.launch.py' for n in builders)
    for path in LAUNCH_FILES:
        assert (share / path.name).read_text() == path.read_text(), f'{path.name} is not installed (run ./dev setup)'
        tree = ast.parse(path.read_text())
        calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]
        assert not [c for c in calls if getattr(c.func, 'id', None) in ('Node', 'ExecuteProcess')], \
            f'{path.name} defines nodes of its own'
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description')
        ret = fn.body[-1].value
        assert ret.func.id == 'graph_launch_description'
        assert [a.id for a in ret.args] == list(builders[path.name.removesuffix('.launch.py')])


def test_launch_common_makes_each_node_from_its_spec_only():
    """``graph_actions`` creates Node actions only as ``Node(**spec.launch_kwargs())``."""
    import hil_bringup.launch_common as lc

    tree = ast.parse(Path(lc.__file__).read_text())
    nodes = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, 'id', None) == 'Node']
    assert nodes
    for node in nodes:
        assert not node.args and len(node.keywords) == 1
        kw = node.keywords[0]
        assert kw.arg is None and ast.unparse(kw.value) == 'spec.launch_kwargs()'


@pytest.mark.parametrize('name, given', VARIANTS, ids=lambda v: str(v))
def test_every_node_resolves_like_launch_ros_and_accepts_its_parameters(name, given):
    graph = build(name, given)
    assert graph.nodes
    for spec in graph.nodes:
        exe = Path(get_package_prefix(spec.package)) / 'lib' / spec.package / spec.executable
        assert exe.is_file() and os.access(exe, os.X_OK), f'{spec.fqn}: {exe} not found'
        declared = {p.name for p in schema(spec.executable)}
        assert set(spec.parameters) <= declared, f'{spec.fqn}: unknown {set(spec.parameters) - declared}'
        validate(schema(spec.executable), spec.parameters)
        # what the demo starts (a params file with the node's name) equals what launch_ros gets
        kwargs = spec.launch_kwargs()
        loaded = yaml.safe_load(spec.params_yaml())
        assert loaded == {spec.fqn: {'ros__parameters': graphs._plain(kwargs['parameters'][0])}}
        args = spec.ros_arguments('p.yaml')
        assert args[:3] == ['--ros-args', '-r', f'__node:={kwargs["name"]}']
        assert (f'__ns:=/{kwargs["namespace"]}' in args) == bool(kwargs['namespace'])
        assert [a for a in args if ':=' in a and not a.startswith('__')] == [f'{s}:={d}' for s, d in kwargs['remappings']]


def test_the_envisat_graph_starts_by_readiness_and_takes_the_lab_from_its_calibration():
    import yaml as _yaml

    from hil_bringup import facility as lab
    from hil_bringup.scenario import load_scenario

    graph = graphs.envisat_graph()
    assert [s.label for s in graph.stages] == ['lab', 'io', 'stack']
    lab_stage, io, stack = graph.stages
    assert [n.executable for n in lab_stage.nodes] == ['lab_twin_node']
    assert {t for t, _ in lab_stage.ready.topics} == {'client/joint_states', 'servicer/joint_states',
                                                      'servicer_arm/joint_states'}
    assert {n.fqn for n in io.nodes} == {'/client/ft_sensor', '/servicer/ft_sensor'}
    assert {t for t, _ in io.ready.topics} == {'client/ft/wrench', 'servicer/ft/wrench'}
    assert {n.fqn for n in stack.nodes} == {'/client_hot_path', '/servicer_hot_path', '/obsw_controller', '/live_view'}
    nodes = graphs.envisat_graph({'hot_path': 'nodes', 'servicer_hot_path': 'nodes'})
    assert {n.fqn for n in nodes.stages[1].nodes} == {'/client/ft_sensor', '/servicer/ft_sensor', '/client/motion_table',
                                                      '/servicer/motion_table'}
    assert {n.fqn for n in nodes.stages[2].nodes} == {'/client_admittance', '/servicer_admittance', '/obsw_controller',
                                                      '/live_view'}
    fac, scenario = lab.load_facility('envisat_lab'), load_scenario('envisat_capture')
    cal = lab.calibrate(fac, scenario)
    twin = graph.node('/lab_twin').parameters
    config = _yaml.safe_load(twin['twin_config_yaml'])
    assert twin['layout'] == 'config' and config == _yaml.safe_load(lab.twin_node_parameters(fac, scenario)['twin_config_yaml'])
    for who, sensor, consumer in (('client', 'client_ft', '/client_hot_path'),
                                  ('servicer', 'servicer_wrist_ft', '/servicer_hot_path')):
        ft = graph.node(f'/{who}/ft_sensor').parameters
        # the driver listens where the twin serves, designs its filter for the twin's rate, and its
        # wrenches carry the frame the consumer expects
        assert f"{sensor}:{ft['sensor_port']}" in twin['rdt_ports']
        assert ft['sensor_rate_hz'] == 1000.0
        assert ft['deadband.widths'] == [float(v) for v in fac.ft_deadband]
        assert graph.node(consumer).parameters['wrench_frame_id'] == ft['sensor_frame']
    # both tables command their body in the one nominal frame of the calibration (seed 004 Eq. 23)
    for fqn, ns in (('/client_hot_path', 'client'), ('/servicer_hot_path', 'servicer')):
        table = graph.node(fqn).parameters
        assert table['command_frame'] == 'nominal' and table['robot'] == fac.robot_models[ns]
        assert np.allclose(table['pose_nominal_in_base_xyz_rpy'], lab.xyz_rpy(cal.pose_nominal_in_base[ns]))
        assert np.allclose(table['pose_body_in_flange_xyz_rpy'], lab.xyz_rpy(cal.pose_body_in_flange[ns]))
    assert graph.node('/servicer_hot_path').parameters['table_pose_from_start'] is False
    assert np.allclose(graph.node('/client_hot_path').parameters['pose_sensor_in_client_xyz_rpy'],
                       lab.xyz_rpy(cal.pose_sensor_in_client))
    ports = graphs.envisat_graph({'client_ft_port': '50001', 'servicer_ft_port': '50002'})
    assert ports.node('/lab_twin').parameters['rdt_ports'] == ['client_ft:50001', 'servicer_wrist_ft:50002']
    # both tables stream at the admittance rate
    rate = graph.node('/servicer_hot_path').parameters['rate_hz']
    assert graph.node('/servicer_hot_path').parameters['period_s'] == graph.node('/client_hot_path').parameters['period_s'] == 1.0 / rate
    assert graphs.envisat_graph({'use_sim': 'false'}).node('/client/ft_sensor').parameters['sensor_rate_hz'] == 0.0


def test_a_calibration_with_the_mock_ups_in_collision_is_refused_at_start_naming_the_field(tmp_path):
    from hil_bringup.facility import facility_path

    text = facility_path('envisat_lab').read_text().replace('translation_m: [4.3, 0.0, 1.3]', 'translation_m: [4.3, 0.0, 0.1]')
    bad = tmp_path / 'bad_lab.yaml'
    bad.write_text(text)
    with pytest.raises(Exception, match='pose_nominal_in_lab|client_mockup|robots'):
        graphs.envisat_graph({'facility': str(bad)})


def test_with_the_twin_eq22_is_commanded_without_its_gravity_term():
    """The twin's arm compensates its own gravity; adding Eq. (22)'s -G as well doubles it."""
    for use_sim, gravity in (('true', 0.0), ('false', 9.80665)):
        graph = graphs.envisat_graph({'use_sim': use_sim})
        assert graph.node('/servicer_hot_path').parameters['gravity_m_s2'] == gravity


def test_the_controller_slot_is_replaceable():
    graph = graphs.envisat_graph({'controller_package': 'my_lab', 'controller_executable': 'my_obsw'})
    slot = graph.node('/obsw_controller')
    assert (slot.package, slot.executable, dict(slot.parameters)) == ('my_lab', 'my_obsw', {})


@pytest.mark.parametrize('given, named', [
    ({'robots': 'ur10e'}, 'robots'), ({'robot': 'ur5'}, 'robot'), ({'use_sim': 'yes'}, 'use_sim'),
    ({'client_ft_port': '49153'}, 'client_ft_port'), ({'servicer_ft_port': '70000'}, 'servicer_ft_port'),
    ({'ft_rate_hz': 'fast'}, 'ft_rate_hz'), ({'realtime_priority': '120'}, 'realtime_priority'),
])
def test_bad_launch_arguments_are_refused_naming_them(given, named):
    with pytest.raises(GraphError, match=named):
        graphs.envisat_graph(given)


def test_ready_conditions_reach_wait_for_ready_unchanged_and_judge_what_arrives():
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState

    from hil_bringup.wait_for_ready import parse

    for graph in (graphs.envisat_graph(), graphs.teleop_graph()):
        for stage in graph.stages:
            if stage.ready is not None:
                assert parse(stage.ready.arguments()) == stage.ready
    ready = Ready((('a', 'geometry_msgs/msg/WrenchStamped'), ('b', 'sensor_msgs/msg/JointState')), count=3, max_force_n=1.0)
    monitor = ReadyMonitor(ready)
    heavy = WrenchStamped()
    heavy.wrench.force.z = -56.0                    # an untared mock-up's weight
    for _ in range(3):
        monitor.feed('a', heavy)
        monitor.feed('b', JointState())
    assert not monitor.done() and 'force not tared' in monitor.missing()
    for _ in range(2):
        monitor.feed('a', WrenchStamped())
    assert not monitor.done()                       # one of the last three is still the weight
    monitor.feed('a', WrenchStamped())
    assert monitor.done() and monitor.missing() == ''


@pytest.mark.parametrize('name', sorted(graphs.GRAPHS))
def test_record_true_records_the_graph_s_topics_with_ros2_bag_or_our_recorder(name):
    from hil_bringup.launch_common import record_command
    from hil_bringup.recorder_node import message_class

    graph = build(name, {})
    assert graph.record_topics
    for _, type_name in graph.record_topics:
        message_class(type_name)                        # every recorded type exists
    topics = [t for t, _ in graph.record_topics]
    cmd = record_command(graph, 'bag', ros2_available=True)['cmd']
    assert cmd[:3] == ['ros2', 'bag', 'record'] and cmd[-len(topics):] == topics and 'mcap' in cmd
    spec = record_command(graph, 'bag', ros2_available=False)['node']
    assert spec.parameters['topics'] == topics and spec.parameters['bag_path'] == 'bag'
    validate(schema(spec.executable), spec.parameters)
    assert record_command(graph, '', ros2_available=False)['node'].parameters['bag_path'].startswith('rosbag2_')


def test_on_the_simulated_clock_the_teleop_master_steps_with_the_twin():
    """The master's uplink answers the twin's barrier (``answer_topics``), which needs one master
    step per twin step: another rate is refused at start naming both."""
    twin = [n for n in graphs.teleop_graph({'sim': 'true'}, rate_hz=100.0).nodes if n.executable == 'lab_twin_node'][0]
    assert twin.parameters['answer_topics'] == ['teleop/f_m'] and twin.parameters['publish_rate_hz'] == 100.0
    wall = [n for n in graphs.teleop_graph({'sim': 'true', 'lab_clock': 'wall'}, rate_hz=100.0).nodes
            if n.executable == 'lab_twin_node'][0]
    assert 'answer_topics' not in wall.parameters
    with pytest.raises(GraphError, match='master 2000 Hz, twin 1000 Hz'):
        graphs.teleop_graph({'sim': 'true'}, rate_hz=2000.0)
