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


def declare_arguments(declared) -> list:
    """DeclareLaunchArgument actions for a graph's arguments (:data:`hil_bringup.graphs.ENVISAT_ARGS`, ...)."""
    from launch.actions import DeclareLaunchArgument

    return [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description,
                                  **({'choices': list(a.choices)} if a.choices else {})) for a in declared]


def argument_values(declared, context) -> dict[str, str]:
    """The launch arguments of ``declared`` as the strings the graph builders take."""
    from launch.substitutions import LaunchConfiguration

    return {a.name: LaunchConfiguration(a.name).perform(context) for a in declared}


def graph_actions(graph) -> list:
    """Launch actions starting ``graph`` (a :class:`hil_bringup.graphs.Graph`) stage by stage.

    Each stage's nodes are ``launch_ros.actions.Node(**spec.launch_kwargs())``. A stage with a
    :class:`~hil_bringup.graphs.Ready` condition is followed by a ``wait_for_ready`` process;
    the next stage starts when it exits 0, and the launch shuts down with the reason when it
    does not (the condition and its timeout are in the graph, as the demos and tests use them).
    """
    from launch.actions import EmitEvent, ExecuteProcess, LogInfo, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown

    from hil_common.ros_testing import node_executable
    from launch_ros.actions import Node

    following: list = []
    for stage in reversed(graph.stages):
        nodes = [Node(**spec.launch_kwargs()) for spec in stage.nodes]
        if stage.ready is None or not following:
            following = nodes + following
            continue
        waiter = ExecuteProcess(cmd=[str(node_executable('hil_bringup', 'wait_for_ready')), *stage.ready.arguments()],
                                name=f'wait_for_{stage.label}', output='screen')

        def on_exit(event, _context, then=following, label=stage.label):
            if event.returncode == 0:
                return [LogInfo(msg=f'stage {label} ready'), *then]
            return [LogInfo(msg=f'stage {label} did not become ready (see wait_for_{label}); shutting down'),
                    EmitEvent(event=Shutdown(reason=f'stage {label} not ready'))]

        following = nodes + [waiter, RegisterEventHandler(OnProcessExit(target_action=waiter, on_exit=on_exit))]
    return following


def record_command(graph, bag_path: str, ros2_available: bool) -> dict:
    """How ``record:=true`` records ``graph.record_topics``: ``{'cmd': [...]}`` for ``ros2 bag record``
    (MCAP) where the ROS 2 CLI is installed, else ``{'node': NodeSpec}`` of our ``recorder_node`` with
    the same topics and bag layout."""
    import time

    from hil_bringup.graphs import NodeSpec

    path = bag_path or time.strftime('rosbag2_%Y_%m_%d-%H_%M_%S')
    topics = [name for name, _ in graph.record_topics]
    if ros2_available:
        return {'cmd': ['ros2', 'bag', 'record', '--storage', 'mcap', '--output', path, *topics]}
    return {'node': NodeSpec('hil_bringup', 'recorder_node', 'recorder', parameters={'bag_path': path, 'topics': topics})}


def record_actions(context, graph) -> list:
    """``record:=true``: ``ros2 bag record`` where installed, else ``recorder_node`` (said in the log)."""
    import shutil

    from launch.actions import ExecuteProcess, LogInfo
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    if LaunchConfiguration('record').perform(context) != 'true':
        return []
    how = record_command(graph, LaunchConfiguration('bag_path').perform(context), shutil.which('ros2') is not None)
    if 'cmd' in how:
        return [ExecuteProcess(cmd=how['cmd'], output='screen')]
    spec = how['node']
    return [LogInfo(msg=f"record:=true: 'ros2 bag' is not installed; recording with hil_bringup/recorder_node to "
                        f"{spec.parameters['bag_path']}"), Node(**spec.launch_kwargs())]


def graph_launch_description(declared, build) -> 'object':
    """The whole launch description of a graph: its arguments, the network, the staged nodes, recording."""
    from launch import LaunchDescription
    from launch.actions import OpaqueFunction

    def nodes(context):
        graph = build(argument_values(declared, context))
        return network_environment(context) + graph_actions(graph) + record_actions(context, graph)

    return LaunchDescription([*declare_arguments(declared), network_argument(), OpaqueFunction(function=nodes)])
