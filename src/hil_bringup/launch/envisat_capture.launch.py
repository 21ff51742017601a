"""Envisat capture (seed 004 §III-C, §V, Fig. 7): the whole HIL graph.

    ros2 launch hil_bringup envisat_capture.launch.py [scenario:=envisat_capture]
        [use_sim:=true|false] [robot:=ur10e|kr120r2500pro|hexapod] [network:=loopback|lab]
        [hot_path:=fused|nodes] [controller_package:=...] [controller_executable:=...] [record:=true]

The node set, its parameters and its start order are defined once, in
:func:`hil_bringup.graphs.envisat_graph` (``ros2 launch ... --show-args`` lists the
arguments of :data:`hil_bringup.graphs.ENVISAT_ARGS`); the demo and the DDS tests start the
same graph. Stages start by readiness: the lab (or its MuJoCo twin with ``use_sim:=true``)
until every robot publishes ``joint_states``; then the F/T drivers and the servicer table
until both sensors stream wrenches; then the client hot path, the servicer admittance and
the OBSW controller-under-test slot.
"""

from hil_bringup.graphs import ENVISAT_ARGS, envisat_graph
from hil_bringup.launch_common import graph_launch_description


def generate_launch_description():
    return graph_launch_description(ENVISAT_ARGS, envisat_graph)
