"""The lab twin with the LEE's wires: ``lab_twin_node`` plus the wire contact between its mock-ups.

Everything of :mod:`hil_lab_twin.lab_twin_node` (robots, ros2_control topics, F/T sensors over
RDT/UDP, ``<sensor>/sensor_pose``), with the twin stepped as a :class:`hil_snare.lab.SnareLab`: before
each physics step :class:`hil_snare.lab.SnareWires` puts the wire wrench of seed 000 Eqs. (10)-(12)
between the LEE mock-up (robot ``servicer``) and the GF mock-up (robot ``client``), so the twin's
F/T sensors measure it and the real F/T drivers read it. Give it the twin of
:func:`hil_snare.lab.snare_twin_config` (``layout: config``, ``twin_config_yaml``).

Extra parameters ``snare_scenario`` (the wires' law, geometry and drive) and the compliant mounts of
the wire ring and the GF shaft (``compliant_mounts``, ``mount_*``: :class:`hil_snare.mount.CompliantMount`
on both sides; docs/snare.md, "The pinch in the twin"). Extra input
``servicer/lee/capture_cmd`` (std_msgs/Bool, transient local): true starts the snare drive. Extra output
``snare/twin_state`` (std_msgs/Float64MultiArray, at ``publish_rate_hz``): the twin's ground truth,
``[t_sim, theta, x, y, z, in_shaft, F_1, F_2, F_3]`` (once per new simulated instant, polled at twice
``publish_rate_hz``): simulated time [s], ring angle [rad], where
the GF axis pierces the wire plane in the LEE frame [m], whether the shaft reaches it, and each
wire's normal force [N] (what a lab's motion capture and the LEE's wire sensors would give).
"""

from __future__ import annotations

import sys

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Bool, Float64MultiArray

from hil_common.errors import ConfigError
from hil_common.params import Param, ParameterError, declare_parameters
from hil_common.ros_main import run_node
from hil_lab_twin.lab_twin_node import PARAMS as LAB_TWIN_PARAMS
from hil_lab_twin.lab_twin_node import LabTwinNode
from hil_snare.mount import CompliantMount

_MOUNT = CompliantMount()      # the defaults (assumptions, hil_snare.mount)
SNARE_PARAMS = [
    Param('snare_scenario', 'htv_capture', 'Snare scenario (name or YAML path) whose wires the twin puts between '
          'its LEE and GF mock-ups (hil_snare.scenario)'),
    Param('compliant_mounts', True, 'Put the wire ring and the GF shaft on compliant carriages in their mock-ups '
          '(hil_snare.mount.CompliantMount, one each side); false: the wires fixed to the mock-ups'),
    Param('mount_stiffness_n_per_m', _MOUNT.stiffness_n_per_m, "Each carriage's isotropic spring [N/m] "
          '(compliant_mounts)', min=1e3, max=1e7),
    Param('mount_mass_kg', _MOUNT.mass_kg, "Each carriage's mass [kg] (compliant_mounts)", min=0.1, max=100.0),
    Param('mount_damping_ratio', _MOUNT.damping_ratio, "Each carriage's damping, a fraction of critical [-] "
          '(compliant_mounts)', min=0.0, max=10.0),
]


class _SnareParameters(Node):
    """Declares :data:`SNARE_PARAMS` right after the node exists, so that the lab twin's own
    declaration (which refuses parameters it does not know) finds them declared."""

    def __init__(self, name: str):
        super().__init__(name)
        self.snare_p = declare_parameters(self, SNARE_PARAMS, check_unknown=False)


class SnareTwinNode(LabTwinNode, _SnareParameters):
    def __init__(self):
        super().__init__()        # LabTwinNode -> _SnareParameters -> Node
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(Bool, 'servicer/lee/capture_cmd', self.on_capture, latched)
        self.state_pub = self.create_publisher(Float64MultiArray, 'snare/twin_state', 100)
        self.state_msg = Float64MultiArray()
        self.published_t = -1.0
        self.create_timer(0.5 / self.get_parameter('publish_rate_hz').value, self.publish_state)

    def stepped_lab(self, twin):
        """Either clock of lab_twin_node steps the twin with its wires."""
        from hil_snare.lab import SnareLab, SnareWires
        from hil_snare.scenario import load_snare_scenario

        import yaml

        from hil_common.errors import HilError

        try:
            scenario = load_snare_scenario(self.snare_p.snare_scenario)
        except (HilError, OSError, yaml.YAMLError) as exc:   # a bad scenario stops start-up naming the parameter
            raise ParameterError(f"parameter 'snare_scenario': {exc}") from None
        if scenario.kind != 'htv_capture':
            raise ParameterError(f"parameter 'snare_scenario': kind {scenario.kind!r} has no LEE; need htv_capture")
        mount = None
        if self.snare_p.compliant_mounts:
            try:
                mount = CompliantMount(self.snare_p.mount_stiffness_n_per_m, self.snare_p.mount_mass_kg,
                                       self.snare_p.mount_damping_ratio)
            except ConfigError as exc:
                raise ParameterError(f"parameters 'mount_*': {exc}") from None
        self.wires = SnareWires(scenario.config, lee_mount=mount, gf_mount=mount)
        self.snare_lab = SnareLab(twin, self.wires)
        return self.snare_lab

    def on_capture(self, msg: Bool) -> None:
        if msg.data and not self.wires.driving:
            self.wires.start_drive()
            self.get_logger().info(f'capture commanded at t = {self.twin.time:.3f} s: the wires tighten')

    def publish_state(self) -> None:
        if self.twin.time == self.published_t:
            return
        self.published_t = self.twin.time
        p, in_shaft = self.wires.section(self.twin)
        if p is None:            # the shaft parallel to the wire plane
            p, in_shaft = (float('nan'),) * 3, False
        self.state_msg.data = [self.twin.time, float(self.wires.theta), *map(float, p), float(in_shaft),
                               *map(float, self.wires.normal_force_n)]
        self.state_pub.publish(self.state_msg)


#: The whole schema of this node (the launch checks read it).
PARAMS = [*SNARE_PARAMS, *LAB_TWIN_PARAMS]


def main(args=None) -> int:
    return run_node(SnareTwinNode, 'snare_twin_node', args)


if __name__ == '__main__':
    sys.exit(main())
