"""Delayed teleoperation of a massive payload (seed 001): earth, link, orbit and the payload in the loop.

    ros2 launch hil_bringup massive_payload_teleop.launch.py [scenario:=massive_payload_teleop]
        [network:=loopback|lab] [sim:=true|false] [master_source:=scripted|ft|joy]
        [slave_ft_ip:=...] [payload_ft_ip:=...]

Graph (topic names relative, remapped here):

* earth: ``teleop_master`` (hil_teleop) — f_m from a scripted operator, a master F/T
  (``master/ft/wrench``) or a Joy, and the virtual arm/payload (Eqs. 4-10);
* link: ``delay_line`` (hil_teleop) — ``teleop/{f_m,x_vir}`` -> ``orbit/teleop/...`` and
  ``slave/{joint_states,ft/wrench,x_s}`` -> ``earth/slave/...``, ``link.delay_s`` each way;
* orbit: ``slave_law`` (hil_teleop) — Eq. (3) on the delayed command and the wrist F/T
  (``slave/ft/wrench``), pose command ``slave/table/pose_cmd`` for the slave motion table;
* payload in the loop: ``payload_admittance`` (hil_admittance's client admittance with a
  zero nominal velocity and the payload's inertia) turns the grip F/T
  (``payload/ft/wrench``) into ``payload/table/pose_cmd`` for the payload motion table;
* ``sim:=true``: ``grip_contact`` (hil_teleop) closes the loop in simulation — the spring-damper
  between the slave end effector and the payload grip, published as both F/T wrenches
  (``hil_bringup.teleop_demo --ros`` runs this graph without launch_ros, and a test checks it);
* ``sim:=false`` (the lab): ``motion_table`` nodes (hil_motion_table) in the ``slave`` and
  ``payload`` namespaces and the Net F/T drivers (hil_sensors) of the slave wrist and the payload
  grip; the slave law then rotates the wrist wrench from the end-effector frame.
  (The MuJoCo lab twin does not model a robot gripping the payload table, so it is not used here.)

Parameters come from the scenario YAML through :mod:`hil_teleop.scenario`, the code the
lockstep runner and the demo (``teleop_demo``) use.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    from hil_bringup.launch_common import network_environment
    from hil_bringup.scenario import scenario_path
    from hil_teleop.scenario import load_teleop_scenario

    name = LaunchConfiguration('scenario').perform(context)
    path = name if name.endswith('.yaml') else scenario_path(name)
    params = load_teleop_scenario(path).node_parameters()
    params['teleop_master']['source'] = LaunchConfiguration('master_source').perform(context)
    actions = network_environment(context)
    sim = LaunchConfiguration('sim').perform(context) == 'true'
    if not sim:                              # the real wrist F/T rotates with the end effector
        params['slave_law']['ft_frame'] = 'end_effector'
    actions += [
        Node(package='hil_teleop', executable='teleop_master_node', name='teleop_master',
             parameters=[params['teleop_master']], output='screen'),
        Node(package='hil_teleop', executable='delay_line_node', name='delay_line',
             parameters=[params['delay_line']], output='screen'),
        Node(package='hil_teleop', executable='slave_law_node', name='slave_law',
             parameters=[params['slave_law']],
             remappings=[('table/pose_cmd', 'slave/table/pose_cmd'), ('table/twist_cmd', 'slave/table/twist_cmd'),
                         ('ft/wrench', 'slave/ft/wrench')], output='screen'),
        Node(package='hil_admittance', executable='client_admittance_node', name='payload_admittance',
             parameters=[params['payload_admittance']],
             remappings=[('client/ft/wrench', 'payload/ft/wrench'), ('client/table/pose_cmd', 'payload/table/pose_cmd'),
                         ('client/table/twist_cmd', 'payload/table/twist_cmd'), ('client/state', 'payload/state')],
             output='screen'),
    ]
    if sim:
        # orbit physics between slave and payload grip, on the same topics the lab's F/T drivers use
        actions.append(Node(package='hil_teleop', executable='grip_contact_node', name='grip_contact',
                            parameters=[params['grip_contact']], output='screen'))
    else:
        actions += [
            Node(package='hil_motion_table', executable='motion_table_node', name='motion_table', namespace='slave',
                 parameters=[{'robot': 'ur10e', 'command_frame': 'base'}], output='screen'),
            Node(package='hil_motion_table', executable='motion_table_node', name='motion_table', namespace='payload',
                 parameters=[{'robot': 'hexapod', 'command_frame': 'home'}], output='screen'),
            Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace='slave',
                 parameters=[{'sensor_ip': LaunchConfiguration('slave_ft_ip').perform(context)}], output='screen'),
            Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace='payload',
                 parameters=[{'sensor_ip': LaunchConfiguration('payload_ft_ip').perform(context)}], output='screen'),
        ]
    return actions


def generate_launch_description():
    from hil_bringup.launch_common import network_argument

    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='massive_payload_teleop', description='scenario name or YAML path'),
        network_argument(),
        DeclareLaunchArgument('sim', default_value='true', choices=['true', 'false'],
                              description='simulated grip contact (true) or the lab: motion tables and F/T drivers'),
        DeclareLaunchArgument('slave_ft_ip', default_value='127.0.0.1', description='slave wrist Net F/T (sim:=false)'),
        DeclareLaunchArgument('payload_ft_ip', default_value='127.0.0.1', description='payload grip Net F/T (sim:=false)'),
        DeclareLaunchArgument('master_source', default_value='scripted', choices=['scripted', 'ft', 'joy'],
                              description='operator input: scripted profile, master F/T or Joy'),
        OpaqueFunction(function=_nodes),
    ])
