"""The HIL snare capture (seed 000 run 3): the HTV's GF mock-up meets the SSRMS's LEE in the lab.

    ros2 launch hil_snare snare_capture.launch.py [scenario:=htv_capture] [use_sim:=true|false]
        [network:=loopback|lab] [ft_host:=...] [client_ft_port:=49152] [servicer_ft_port:=49153]
        [control_rate_hz:=250] [record:=true bag_path:=...]

The node set, its parameters and its start order are defined once, in
:func:`hil_snare.graph.snare_graph` (arguments: :data:`hil_snare.graph.SNARE_ARGS`);
``snare_demo`` and the DDS test start the same graph. With ``use_sim:=true`` (default) the MuJoCo
lab twin with the LEE's wires is the lab; the F/T drivers and the tables start once both robots
publish ``joint_states``, the client admittance (the HTV) and the SSRMS servicer side once both
drivers stream tared wrenches.
"""

from hil_bringup.launch_common import graph_launch_description
from hil_snare.graph import SNARE_ARGS, snare_graph


def generate_launch_description():
    return graph_launch_description(SNARE_ARGS, snare_graph)
