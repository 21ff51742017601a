"""Pieces every hil_bringup launch file needs: the ``network`` argument and its environment.

``network:=loopback`` (default) runs every node under the loopback-only Fast DDS profile;
``network:=lab`` leaves the lab's own DDS configuration in place (docs/network.md).
Imported by launch files only (needs ``launch``).
"""

from __future__ import annotations

import os


def network_argument():
    from launch.actions import DeclareLaunchArgument

    return DeclareLaunchArgument('network', default_value='loopback', choices=['loopback', 'lab'],
                                 description='loopback-only DDS (default) or the lab network')


def network_environment(context) -> list:
    """SetEnvironmentVariable actions for the chosen ``network`` launch argument."""
    from ament_index_python.packages import get_package_share_directory
    from launch.actions import SetEnvironmentVariable
    from launch.substitutions import LaunchConfiguration

    if LaunchConfiguration('network').perform(context) == 'loopback':
        profile = os.path.join(get_package_share_directory('hil_common'), 'config', 'fastdds_loopback.xml')
        return [SetEnvironmentVariable('FASTRTPS_DEFAULT_PROFILES_FILE', profile),
                SetEnvironmentVariable('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
                SetEnvironmentVariable('HIL_NETWORK', 'loopback')]
    return [SetEnvironmentVariable('HIL_NETWORK', 'lab')]
