"""ROS 2 node running the simulated Net F/T (:class:`hil_sensors.rdt_sim.RdtSimulator`).

The simulator speaks RDT on a UDP port (127.0.0.1:49152 by default) exactly like the
sensor, so ``ft_sensor_node`` is pointed at it with ``sensor_ip``/``sensor_port`` and
nothing else changes. Its wrench source is chosen with ``source``:

* ``constant``: ``wrench`` (N, Nm, sensor frame);
* ``sine``: ``sine.offset + sine.amplitude * sin(2 pi sine.frequency_hz t)``;
* ``topic``: the latest geometry_msgs/WrenchStamped on ``source_topic`` (e.g. from the
  MuJoCo lab twin, or a scripted profile), held until the next one.

Options: ``noise_std`` (N, Nm), ``bias`` (a constant offset the driver's tare must remove),
``saturation.enabled``/``saturation.limits`` (clip and set status bit 17), and
``serve_calibration``/``http_port`` for the netftapi2.xml page.
"""

from __future__ import annotations

import sys

from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node

from hil_common.params import Param, declare_parameters
from hil_common.ros_main import run_node
from hil_sensors import rdt
from hil_sensors.ft_driver import check_force_unit, check_ipv4, check_torque_unit
from hil_sensors.rdt_sim import ConstantSource, RdtSimulator, SineSource

PARAMS = (
    Param('host', '127.0.0.1', 'address the simulated sensor listens on', check=check_ipv4),
    Param('port', rdt.RDT_PORT, 'RDT UDP port', min=1, max=65535),
    Param('rate_hz', 1000.0, 'records per second', min=1.0, max=100000.0),
    Param('records_per_packet', 10, 'records per datagram in buffered mode', min=1, max=rdt.MAX_RECORDS_PER_PACKET),
    Param('counts_per_force', 1000000.0, 'calibration: counts per force_unit', min=1e-9),
    Param('counts_per_torque', 1000000.0, 'calibration: counts per torque_unit', min=1e-9),
    Param('force_unit', 'N', 'calibration force unit', check=check_force_unit),
    Param('torque_unit', 'Nm', 'calibration torque unit', check=check_torque_unit),
    Param('serve_calibration', False, 'serve /netftapi2.xml over HTTP'),
    Param('http_port', 8080, 'HTTP port of the calibration page (0: any free port)', min=0, max=65535),
    Param('source', 'constant', 'wrench source', choices=('constant', 'sine', 'topic')),
    Param('wrench', [0.0] * 6, 'constant wrench Fx Fy Fz Tx Ty Tz (N, Nm)', length=6),
    Param('sine.amplitude', [0.0] * 6, 'sine amplitude per axis', length=6),
    Param('sine.offset', [0.0] * 6, 'sine offset per axis', length=6),
    Param('sine.frequency_hz', 1.0, 'sine frequency', min=0.0),
    Param('source_topic', 'sim/wrench_in', 'geometry_msgs/WrenchStamped input when source is topic'),
    Param('noise_std', [0.0] * 6, 'Gaussian noise standard deviation per axis (N, Nm)', length=6, min=0.0),
    Param('bias', [0.0] * 6, 'constant offset added to the wrench (N, Nm)', length=6),
    Param('saturation.enabled', False, 'clip at saturation.limits and set the saturation status bit'),
    Param('saturation.limits', [1000.0, 1000.0, 3000.0, 100.0, 100.0, 100.0], 'saturation per axis', length=6,
          min=1e-9),
    Param('seed', 0, 'noise seed', min=0),
)


class FtSimNode(Node):
    def __init__(self, **kwargs):
        super().__init__('ft_sensor_sim', **kwargs)
        p = declare_parameters(self, PARAMS)
        if p.source == 'sine':
            source = SineSource(p.sine.amplitude, p.sine.frequency_hz, p.sine.offset)
        else:
            source = ConstantSource(p.wrench)
        self.source = source
        if p.source == 'topic':
            self.create_subscription(WrenchStamped, p.source_topic, self._on_wrench, 10)
        calibration = rdt.Calibration(p.counts_per_force, p.counts_per_torque, p.force_unit,
                                      p.torque_unit, source='simulator')
        self.sim = RdtSimulator(source, calibration=calibration, host=p.host, port=p.port,
                                rate_hz=p.rate_hz, records_per_packet=p.records_per_packet,
                                http_port=p.http_port if p.serve_calibration else None,
                                noise_std=p.noise_std, bias=p.bias,
                                saturation=p.saturation.limits if p.saturation.enabled else None,
                                seed=p.seed)
        self.sim.start()
        self.get_logger().info(
            f"simulated Net F/T on {p.host}:{self.sim.port} at {p.rate_hz:g} Hz, source {p.source}"
            + (f', calibration page on port {self.sim.http_port}' if p.serve_calibration else ''))

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        self.source.set((f.x, f.y, f.z, t.x, t.y, t.z))

    def close(self) -> None:
        self.sim.stop()


def main(args=None) -> int:
    return run_node(FtSimNode, 'ft_sensor_sim', args)

if __name__ == '__main__':
    sys.exit(main())
