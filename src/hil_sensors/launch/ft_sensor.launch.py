"""Launch the F/T driver (and optionally the simulated sensor) on a ROS 2 install.

    ros2 launch hil_sensors ft_sensor.launch.py namespace:=client sim:=true

In this repository's venv (no launch_ros) run the executables directly, e.g.
    ./dev run ft_sensor_sim_node --ros-args --params-file src/hil_sensors/config/ft_sensor_sim.yaml
    ./dev run ft_sensor_node --ros-args -r __ns:=/client --params-file src/hil_sensors/config/ft_sensor.yaml
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    share = get_package_share_directory('hil_sensors')
    params = LaunchConfiguration('params')
    sim_params = LaunchConfiguration('sim_params')
    namespace = LaunchConfiguration('namespace')
    return LaunchDescription([
        DeclareLaunchArgument('namespace', default_value='client'),
        DeclareLaunchArgument('params', default_value=os.path.join(share, 'config', 'ft_sensor.yaml')),
        DeclareLaunchArgument('sim_params', default_value=os.path.join(share, 'config', 'ft_sensor_sim.yaml')),
        DeclareLaunchArgument('sim', default_value='true', description='also start the simulated sensor'),
        Node(package='hil_sensors', executable='ft_sensor_sim_node', name='ft_sensor_sim', namespace=namespace,
             parameters=[sim_params], condition=IfCondition(LaunchConfiguration('sim')), output='screen'),
        Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace=namespace,
             parameters=[params], output='screen'),
    ])
