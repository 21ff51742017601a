"""Delayed teleoperation of a massive payload (seed 001): earth, link, orbit and the payload in the loop.

    ros2 launch hil_bringup massive_payload_teleop.launch.py [scenario:=massive_payload_teleop]
        [network:=loopback|lab] [sim:=true|contact|false] [master_source:=scripted|ft|joy]
        [slave_ft_ip:=...] [payload_ft_ip:=...] [slave_ft_port:=49152] [payload_ft_port:=49153]

The node set, its parameters and its start order are defined once, in
:func:`hil_bringup.graphs.teleop_graph` (arguments: :data:`hil_bringup.graphs.TELEOP_ARGS`);
``teleop_demo --ros`` and the DDS tests start the same graph. With ``sim:=true`` (default)
the MuJoCo lab twin is the lab; the F/T drivers and motion tables start once both robots
publish ``joint_states``, and the teleoperation nodes (master, delay line, slave law,
payload admittance) once both F/T drivers stream tared wrenches, so the payload admittance
never integrates the mock-up's weight. ``sim:=contact`` runs the robot-less grip contact.
"""

from hil_bringup.graphs import TELEOP_ARGS, teleop_graph
from hil_bringup.launch_common import graph_launch_description


def generate_launch_description():
    return graph_launch_description(TELEOP_ARGS, teleop_graph)
