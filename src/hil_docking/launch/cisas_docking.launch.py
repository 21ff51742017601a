"""Rendezvous and docking on the CISAS facility (seed 003): CW approach, impact with virtual-force
compensation, post-impact leg.

    ros2 launch hil_docking cisas_docking.launch.py [scenario:=cisas_docking|PATH.yaml]
        [lab:=emulated|cisas|twin] [compensation:=none|first_order|pole] [network:=loopback|lab] [record:=true]

The node set is defined once, in :func:`hil_docking.graph.cisas_graph` (arguments:
:data:`hil_docking.graph.CISAS_ARGS`); ``docking_demo``'s live stage and the DDS tests start the
same graph. ``lab:=emulated`` closes the loop with the emulated CISAS robot and contact, ``lab:=cisas``
with the facility, ``lab:=twin`` with its MuJoCo lab twin (the probe and plate of ``k_L``).
"""

from hil_bringup.launch_common import graph_launch_description
from hil_docking.graph import CISAS_ARGS, cisas_graph


def generate_launch_description():
    return graph_launch_description(CISAS_ARGS, cisas_graph)
