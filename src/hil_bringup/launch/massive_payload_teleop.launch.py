"""Delayed teleoperation of a massive payload (seed 001): earth, link, orbit and the payload in the loop.

    ros2 launch hil_bringup massive_payload_teleop.launch.py [scenario:=massive_payload_teleop]
        [network:=loopback|lab] [sim:=true|contact|false] [master_source:=scripted|ft|joy]
        [slave_ft_ip:=...] [payload_ft_ip:=...] [slave_ft_port:=49152] [payload_ft_port:=49153]
        [stack_delay_s:=5.0]

Graph (topic names relative, remapped here):

* earth: ``teleop_master`` (hil_teleop) — f_m from a scripted operator, a master F/T
  (``master/ft/wrench``) or a Joy, and the virtual arm/payload (Eqs. 4-10);
* link: ``delay_line`` (hil_teleop) — ``teleop/{f_m,x_vir}`` -> ``orbit/teleop/...`` and
  ``slave/{joint_states,ft/wrench,x_s}`` -> ``earth/slave/...``, ``link.delay_s`` each way;
* orbit: ``slave_law`` (hil_teleop) — Eq. (3) on the delayed command, the wrist F/T
  (``slave/ft/wrench``) and ``x_s``/``v_s`` measured on the slave's ``slave/joint_states``
  (forward kinematics); flange pose command ``slave/table/pose_cmd`` for the slave motion table;
* payload in the loop: ``payload_admittance`` (hil_admittance's client admittance with a
  zero nominal velocity and the payload's inertia, CoM at the grapple) turns the payload F/T
  (``payload/ft/wrench``) into ``payload/table/pose_cmd`` for the payload motion table;
* robots: ``motion_table`` nodes (hil_motion_table) in the ``slave`` (KR 120, base frame) and
  ``payload`` (UR10e, relative to its start pose) namespaces, and the Net F/T drivers
  (hil_sensors ``ft_sensor_node``, tared at start) of the slave wrist and the payload mock-up;
* ``sim:=true`` (default): the MuJoCo lab twin (hil_lab_twin ``lab_twin_node``, ``layout:=teleop``)
  is the lab: the slave robot grips the mock-up on the payload table through a compliant
  gripper, and both F/T sensors are served over RDT/UDP on 127.0.0.1 (``slave_ft_port``,
  ``payload_ft_port``) to the drivers;
* ``sim:=false``: the lab's robots and sensors (``slave_ft_ip``, ``payload_ft_ip``);
* ``sim:=contact``: no robots: ``grip_contact`` (hil_teleop) publishes a spring-damper between
  the slave command and the payload pose as both wrenches (the slave law integrates its own
  command, ``slave_robot:=none``) — a light check of the teleoperation nodes without MuJoCo.

Parameters come from the scenario YAML through :mod:`hil_teleop.scenario`, the code the
lockstep runners and the demo (``teleop_demo``) use.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, TimerAction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    from hil_bringup.launch_common import network_environment
    from hil_bringup.scenario import scenario_path
    from hil_teleop.scenario import load_teleop_scenario

    name = LaunchConfiguration('scenario').perform(context)
    path = name if name.endswith('.yaml') else scenario_path(name)
    scenario = load_teleop_scenario(path)
    sim = LaunchConfiguration('sim').perform(context)
    ports = [int(LaunchConfiguration(f'{who}_ft_port').perform(context)) for who in ('slave', 'payload')]
    params = scenario.node_parameters() if sim == 'contact' else scenario.twin_node_parameters(*ports)
    params['teleop_master']['source'] = LaunchConfiguration('master_source').perform(context)
    actions = network_environment(context)
    slave_remaps = [('table/pose_cmd', 'slave/table/pose_cmd'), ('table/twist_cmd', 'slave/table/twist_cmd'),
                    ('ft/wrench', 'slave/ft/wrench'), ('joint_states', 'slave/joint_states')]
    stack = [
        Node(package='hil_teleop', executable='teleop_master_node', name='teleop_master',
             parameters=[params['teleop_master']], output='screen'),
        Node(package='hil_teleop', executable='delay_line_node', name='delay_line',
             parameters=[params['delay_line']], output='screen'),
        Node(package='hil_teleop', executable='slave_law_node', name='slave_law',
             parameters=[params['slave_law']], remappings=slave_remaps, output='screen'),
        Node(package='hil_admittance', executable='client_admittance_node', name='payload_admittance',
             parameters=[params['payload_admittance']],
             remappings=[('client/ft/wrench', 'payload/ft/wrench'), ('client/table/pose_cmd', 'payload/table/pose_cmd'),
                         ('client/table/twist_cmd', 'payload/table/twist_cmd'), ('client/state', 'payload/state')],
             output='screen'),
    ]
    if sim == 'contact':
        stack.append(Node(package='hil_teleop', executable='grip_contact_node', name='grip_contact',
                          parameters=[params['grip_contact']], output='screen'))
        return actions + stack
    # the lab (or its twin), F/T drivers and tables first; the teleoperation stack once the drivers have
    # tared (teleop_demo --ros waits for tared wrenches instead of a fixed time)
    actions.append(TimerAction(period=float(LaunchConfiguration('stack_delay_s').perform(context)), actions=stack))
    if sim == 'true':                        # the lab twin stands in for the robots and the F/T sensors
        actions.append(Node(package='hil_lab_twin', executable='lab_twin_node', name='lab_twin',
                            parameters=[params['lab_twin']], output='screen'))
    else:
        for who in ('slave', 'payload'):
            params[f'{who}_ft']['sensor_ip'] = LaunchConfiguration(f'{who}_ft_ip').perform(context)
    for who in ('slave', 'payload'):
        actions += [
            Node(package='hil_motion_table', executable='motion_table_node', name='motion_table', namespace=who,
                 parameters=[params[f'{who}_table']], output='screen'),
            Node(package='hil_sensors', executable='ft_sensor_node', name='ft_sensor', namespace=who,
                 parameters=[params[f'{who}_ft']], output='screen'),
        ]
    return actions


def generate_launch_description():
    from hil_bringup.launch_common import network_argument

    return LaunchDescription([
        DeclareLaunchArgument('scenario', default_value='massive_payload_teleop', description='scenario name or YAML path'),
        network_argument(),
        DeclareLaunchArgument('sim', default_value='true', choices=['true', 'contact', 'false'],
                              description='MuJoCo lab twin (true), the lab (false) or the robot-less grip contact'),
        DeclareLaunchArgument('slave_ft_ip', default_value='127.0.0.1', description='slave wrist Net F/T (sim:=false)'),
        DeclareLaunchArgument('payload_ft_ip', default_value='127.0.0.1', description='payload Net F/T (sim:=false)'),
        DeclareLaunchArgument('stack_delay_s', default_value='5.0',
                              description='start the teleoperation nodes this long after the robots and F/T drivers'),
        DeclareLaunchArgument('slave_ft_port', default_value='49152', description='RDT port of the slave wrist F/T'),
        DeclareLaunchArgument('payload_ft_port', default_value='49153', description='RDT port of the payload F/T'),
        DeclareLaunchArgument('master_source', default_value='scripted', choices=['scripted', 'ft', 'joy'],
                              description='operator input: scripted profile, master F/T or Joy'),
        OpaqueFunction(function=_nodes),
    ])
