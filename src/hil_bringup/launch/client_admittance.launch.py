"""Client-only graph: the client admittance node fed by a scripted wrench (or a real F/T driver).

    ros2 launch hil_bringup client_admittance.launch.py [scenario:=envisat_capture]
        [network:=loopback|lab] [scripted_wrench:=true|false]

Parameters come from the mission scenario YAML (hil_bringup/scenarios/<scenario>.yaml)
through hil_bringup.scenario, the same code the demo and the lockstep runner use.
``network:=loopback`` (default) runs every node under the loopback-only Fast DDS profile;
``network:=lab`` leaves the lab's own DDS configuration in place (docs/network.md).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hil_bringup.launch_common import network_argument, network_environment


def _nodes(context):
    from hil_bringup.scenario import client_admittance_parameters, load_scenario

    scenario = load_scenario(LaunchConfiguration('scenario').perform(context))
    return network_environment(context) + [
        Node(package='hil_admittance', executable='client_admittance_node', name='client_admittance',
             parameters=[client_admittance_parameters(scenario)], output='screen'),
        Node(package='hil_bringup', executable='scripted_wrench_node', name='scripted_wrench',
             condition=IfCondition(LaunchConfiguration('scripted_wrench')), output='screen'),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='envisat_capture', description='scenario name or YAML path'),
        network_argument(),
        DeclareLaunchArgument('scripted_wrench', default_value='true', choices=['true', 'false'],
                              description='publish a scripted push instead of a real F/T sensor'),
        OpaqueFunction(function=_nodes),
    ])
