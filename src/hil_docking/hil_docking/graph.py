"""The ROS graph of the seed 003 docking, defined once (no rclpy, no launch).

:func:`cisas_graph` builds the :class:`hil_bringup.graphs.Graph` of ``cisas_docking.launch.py``
from the launch arguments :data:`CISAS_ARGS` (strings, as ``ros2 launch`` gives them) and the
docking scenario. The launch file (``share/hil_docking/launch/cisas_docking.launch.py``), the
live stage of ``docking_demo`` and the DDS tests (:mod:`hil_docking.live`) start this one
definition. The builder lives here, not in :mod:`hil_bringup.graphs`, because ``hil_docking``
depends on ``hil_bringup`` (recorder, graph runner), not the reverse.

The graph (``lab:=emulated``, the only lab so far):

* stage ``lab``: ``facility_emulator_node`` (:mod:`hil_docking.facility_emulator_node`), the
  CISAS robot as an ideal robot with the loop delay and the facility's lumped contact;
* stage ``stack``: ``docking_facility_node`` (:mod:`hil_docking.docking_facility_node`), the CW
  relative admittance with the planned burns and the virtual force (seed 003 Fig. 5).

Both read the same scenario file. A scenario the designer finds unstable for its facility loop
(equivalent mass below the exact ``m_min``) is refused here, before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from hil_bringup.graphs import RECORD_ARGS, Arg, Graph, GraphError, NodeSpec, Stage, float_arg, resolve_arguments
from hil_docking.contact import COMPENSATIONS

CISAS_ARGS = (
    Arg('scenario', 'cisas_docking', 'docking scenario: a name in share/hil_docking/scenarios or a YAML path'),
    Arg('lab', 'emulated', 'the lab side of the loop: the emulated CISAS robot and contact (facility_emulator_node); '
                           'the real facility needs a CISAS motion table, see docs/docking.md', ('emulated',)),
    Arg('compensation', '', "virtual-force compensation, overriding the scenario's facility.compensation (empty: "
                            'the scenario value)', ('',) + COMPENSATIONS),
    Arg('pose_timeout_s', '2.0', 'the docking node holds while the last robot pose arrived longer ago than this [s] '
                                 '(the emulated robot answers every command, so only a dead robot stops it)'),
    *RECORD_ARGS,
)

_POSE, _TWIST, _WRENCH = 'geometry_msgs/msg/PoseStamped', 'geometry_msgs/msg/TwistStamped', 'geometry_msgs/msg/WrenchStamped'
CISAS_STATUS_TOPIC = 'facility/status'
CISAS_RECORD_TOPICS = (
    ('chaser/pose_cmd', _POSE), ('chaser/twist_cmd', _TWIST), ('facility/robot_pose_lvlh', _POSE),
    ('facility/ft/wrench', _WRENCH), ('facility/virtual_wrench', _WRENCH),
    (CISAS_STATUS_TOPIC, 'diagnostic_msgs/msg/DiagnosticStatus'),
)
#: Latched (transient-local) topics among them.
CISAS_LATCHED_TOPICS = (CISAS_STATUS_TOPIC,)


def scenario_file(name_or_path: str) -> Path:
    """The scenario file a ``scenario:=`` argument names (a ``.yaml`` path, else a shipped scenario)."""
    from hil_docking.scenario import scenario_path

    path = Path(name_or_path) if name_or_path.endswith(('.yaml', '.yml')) else scenario_path(name_or_path)
    if not path.is_file():
        raise GraphError(f'launch argument scenario:={name_or_path!r}: no such scenario ({path})')
    return path.resolve()


def cisas_graph(given: Mapping[str, str] | None = None) -> Graph:
    """The node set of ``cisas_docking.launch.py`` for launch arguments ``given`` (strings)."""
    from hil_docking.facility_rule import DockingFacility
    from hil_docking.scenario import load_docking_scenario

    args = resolve_arguments(CISAS_ARGS, given)
    path = scenario_file(args['scenario'])
    scenario = load_docking_scenario(path)                     # errors name the field
    DockingFacility(scenario, args['compensation'] or None)     # refuses a loop the designer finds unstable
    # The emulated lab has no clock of its own: when the machine is slow, the docking node waits for
    # the robot's samples and never drops steps; the simulated timeline falls behind the wall clock.
    facility = {'scenario_file': str(path), 'compensation': args['compensation'],
                'pose_timeout_s': float_arg(args, 'pose_timeout_s', 0.001, 10.0), 'max_catch_up': 10**9}
    return Graph('cisas_docking', (
        Stage('lab', (NodeSpec('hil_docking', 'facility_emulator_node', 'facility_emulator',
                               parameters={'scenario_file': str(path)}),)),
        Stage('stack', (NodeSpec('hil_docking', 'docking_facility_node', 'docking_facility', parameters=facility),)),
    ), CISAS_RECORD_TOPICS).check()
