"""Client-only graph: the client admittance node fed by a scripted wrench (or a real F/T driver).

    ros2 launch hil_bringup client_admittance.launch.py [scenario:=envisat_capture]
        [network:=loopback|lab] [scripted_wrench:=true|false]

Parameters come from the mission scenario YAML (hil_bringup/scenarios/<scenario>.yaml)
through hil_bringup.scenario, the same code the demo and the lockstep runner use.
``network:=loopback`` (default) runs every node under the loopback-only Fast DDS profile;
``network:=lab`` leaves the lab's own DDS configuration in place (docs/network.md).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    from hil_bringup.scenario import client_admittance_parameters, load_scenario

    scenario = load_scenario(LaunchConfiguration('scenario').perform(context))
    actions = []
    if LaunchConfiguration('network').perform(context) == 'loopback':
        profile = os.path.join(get_package_share_directory('hil_common'), 'config', 'fastdds_loopback.xml')
        actions += [SetEnvironmentVariable('FASTRTPS_DEFAULT_PROFILES_FILE', profile),
                    SetEnvironmentVariable('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
                    SetEnvironmentVariable('HIL_NETWORK', 'loopback')]
    else:
        actions.append(SetEnvironmentVariable('HIL_NETWORK', 'lab'))
    actions += [
        Node(package='hil_admittance', executable='client_admittance_node', name='client_admittance',
             parameters=[client_admittance_parameters(scenario)], output='screen'),
        Node(package='hil_bringup', executable='scripted_wrench_node', name='scripted_wrench',
             condition=IfCondition(LaunchConfiguration('scripted_wrench')), output='screen'),
    ]
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='envisat_capture', description='scenario name or YAML path'),
        DeclareLaunchArgument('network', default_value='loopback', choices=['loopback', 'lab'],
                              description='loopback-only DDS (default) or the lab network'),
        DeclareLaunchArgument('scripted_wrench', default_value='true', choices=['true', 'false'],
                              description='publish a scripted push instead of a real F/T sensor'),
        OpaqueFunction(function=_nodes),
    ])
