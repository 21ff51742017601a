"""Envisat capture (seed 004 §III-C, §V, Fig. 7): the whole HIL graph.

    ros2 launch hil_bringup envisat_capture.launch.py [scenario:=envisat_capture]
        [use_sim:=true|false] [robot:=ur10e|kr120r2500pro|hexapod] [network:=loopback|lab]
        [controller_package:=hil_admittance] [controller_executable:=obsw_controller_node]

Nodes (parameters from the mission scenario YAML through hil_bringup.scenario, the same
code the demo and the lockstep runner use):

* ``client/ft_sensor`` and ``servicer/ft_sensor`` -- the ATI Net F/T RDT drivers (client
  mock-up sensor, wrist sensor) on ``<ns>/ft/wrench``, ``<ns>/ft/fault``;
* the client hot path: ``client_hot_path`` (``hot_path:=fused``, default: Eq. 11 and the table
  IK in one callback per F/T sample, at SCHED_FIFO ``realtime_priority:=50``, the lowest latency
  in ``bench/bench_envisat.py`` and the one that meets p99 <= 2 ms) or
  ``client_admittance`` + ``client/motion_table`` (``hot_path:=nodes``);
* ``servicer_admittance`` (Eq. 18, 22, 23);
* the OBSW controller-under-test slot: ``controller_package``/``controller_executable``
  (default: the example controller ``hil_admittance/obsw_controller_node``); a replacement
  reads ``client/state``, ``servicer/state``, ``servicer_arm/joint_states`` and publishes
  ``servicer/base_wrench_cmd`` and ``servicer_arm/torque_cmd``;
* ``servicer/motion_table`` -- the table IK of the servicer robot (KR 120); the client robot
  (``robot``) is commanded by the hot path, both on ``<ns>/forward_position_controller``;
* with ``use_sim:=true`` the MuJoCo lab twin stands in for the robots and serves the two F/T
  sensors over RDT/UDP on 127.0.0.1; with ``use_sim:=false`` the real robots' ros2_control
  and sensors are expected on the same topics (``ft_host`` names the sensors' address).
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

CLIENT_FT_PORT, SERVICER_FT_PORT = 49152, 49153


def _nodes(context):
    # FT_DEADBAND: the admittances must not integrate sensor noise (hil_bringup.twin_validation shows
    # the drift), so both drivers zero it with a band of five noise standard deviations.
    from hil_bringup.envisat_demo import FT_DEADBAND, client_body_in_flange, servicer_body_in_flange
    from hil_bringup.launch_common import network_environment
    from hil_bringup.scenario import (client_admittance_parameters, load_scenario, obsw_parameters,
                                      servicer_admittance_parameters)

    scenario = load_scenario(LaunchConfiguration('scenario').perform(context))
    robot = LaunchConfiguration('robot').perform(context)
    use_sim = LaunchConfiguration('use_sim').perform(context) == 'true'
    ft_host = '127.0.0.1' if use_sim else LaunchConfiguration('ft_host').perform(context)
    controller = (LaunchConfiguration('controller_package').perform(context),
                  LaunchConfiguration('controller_executable').perform(context))
    rate = scenario.admittance_hz
    actions = network_environment(context)
    actions += [
        Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace='client',
             parameters=[{'sensor_ip': ft_host, 'sensor_port': CLIENT_FT_PORT, **FT_DEADBAND}], output='screen'),
        Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace='servicer',
             parameters=[{'sensor_ip': ft_host, 'sensor_port': SERVICER_FT_PORT, **FT_DEADBAND}], output='screen'),
        Node(package='hil_admittance', executable='servicer_admittance_node', name='servicer_admittance',
             parameters=[{**servicer_admittance_parameters(scenario, arm_compensates_gravity=use_sim),
                          'table_pose_from_start': True}], output='screen'),
        Node(package='hil_motion_table', executable='motion_table_node', name='motion_table', namespace='servicer',
             parameters=[{'robot': 'kr120r2500pro', 'command_frame': 'home', 'period_s': 1.0 / rate,
                          'pose_body_in_flange_xyz_rpy': servicer_body_in_flange(scenario)}], output='screen'),
    ]
    # The client hot path (F/T -> Eq. 11 -> table IK -> robot command): one node, one callback per
    # sample (default, the lowest latency in bench_envisat), or the two separate nodes.
    client_table = {'robot': robot, 'command_frame': 'home', 'period_s': 1.0 / rate,
                    'pose_body_in_flange_xyz_rpy': client_body_in_flange(scenario)}
    if LaunchConfiguration('hot_path').perform(context) == 'fused':
        cpu = LaunchConfiguration('hot_path_cpu').perform(context)
        rt = {'realtime_priority': int(LaunchConfiguration('realtime_priority').perform(context)),
              'cpu_affinity': [(os.cpu_count() or 1) - 1 if cpu == 'last' else int(cpu)]}
        actions.append(Node(package='hil_bringup', executable='client_hot_path_node', name='client_hot_path',
                            parameters=[{**client_admittance_parameters(scenario), **client_table, **rt}],
                            output='screen'))
    else:
        actions += [Node(package='hil_admittance', executable='client_admittance_node', name='client_admittance',
                         parameters=[client_admittance_parameters(scenario)], output='screen'),
                    Node(package='hil_motion_table', executable='motion_table_node', name='motion_table',
                         namespace='client', parameters=[client_table], output='screen')]
    # The controller-under-test slot (replaceable): resolved from the launch arguments.
    package, executable = controller
    params = [obsw_parameters(scenario)] if controller == ('hil_admittance', 'obsw_controller_node') else []
    actions.append(Node(package=package, executable=executable, name='obsw_controller', parameters=params,
                        output='screen'))
    if use_sim:
        actions.append(Node(package='hil_lab_twin', executable='lab_twin_node', name='lab_twin',
                            parameters=[{'tables': [f'client:{robot}'], 'with_servicer': True,
                                         'rdt_ports': [f'client_ft:{CLIENT_FT_PORT}', f'servicer_wrist_ft:{SERVICER_FT_PORT}']}],
                            output='screen'))
    return actions


def generate_launch_description():
    from hil_bringup.launch_common import network_argument

    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='envisat_capture', description='scenario name or YAML path'),
        DeclareLaunchArgument('use_sim', default_value='true', choices=['true', 'false'],
                              description='MuJoCo lab twin (true) or the real facility (false)'),
        DeclareLaunchArgument('robot', default_value='ur10e', choices=['ur10e', 'kr120r2500pro', 'hexapod'],
                              description='robot carrying the client mock-up'),
        DeclareLaunchArgument('ft_host', default_value='127.0.0.1', description='Net F/T address (use_sim:=false)'),
        DeclareLaunchArgument('controller_package', default_value='hil_admittance',
                              description='package of the OBSW controller under test'),
        DeclareLaunchArgument('controller_executable', default_value='obsw_controller_node',
                              description='executable of the OBSW controller under test'),
        DeclareLaunchArgument('hot_path', default_value='fused', choices=['fused', 'nodes'],
                              description='client hot path in one node (fused) or as admittance + motion-table nodes'),
        DeclareLaunchArgument('realtime_priority', default_value='50',
                              description='SCHED_FIFO priority of the fused hot path (0: normal scheduling); '
                                          'without CAP_SYS_NICE the node warns and runs at normal priority'),
        DeclareLaunchArgument('hot_path_cpu', default_value='last',
                              description="CPU the fused hot path is pinned to: 'last', a CPU number, or -1 for any"),
        DeclareLaunchArgument('record', default_value='false', choices=['true', 'false'],
                              description='record every topic with ros2 bag (MCAP)'),
        network_argument(),
        OpaqueFunction(function=_nodes),
        _record_action(),
    ])


def _record_action():
    from launch.actions import ExecuteProcess

    return ExecuteProcess(cmd=['ros2', 'bag', 'record', '--all', '--storage', 'mcap'],
                          condition=IfCondition(LaunchConfiguration('record')), output='screen')
