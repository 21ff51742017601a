"""Client-only graph: the client admittance node fed by a scripted wrench.

    ros2 launch hil_bringup client_admittance.launch.py [scenario:=envisat_capture]
        [network:=loopback|lab] [scripted_wrench:=true|false]

The node set is defined once, in :func:`hil_bringup.graphs.client_graph` (arguments:
:data:`hil_bringup.graphs.CLIENT_ARGS`), which the client-only demo starts too.
``network:=loopback`` (default) runs every node under the loopback-only Fast DDS profile;
``network:=lab`` leaves the lab's own DDS configuration in place (docs/network.md).
"""

from hil_bringup.graphs import CLIENT_ARGS, client_graph
from hil_bringup.launch_common import graph_launch_description


def generate_launch_description():
    return graph_launch_description(CLIENT_ARGS, client_graph)
