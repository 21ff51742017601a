"""Stream the twin's F/T sensors over RDT/UDP through the simulated Net F/T of ``hil_sensors``.

The real driver (``hil_sensors`` ``ft_sensor_node`` / :class:`hil_sensors.ft_driver.FtDriver`)
then reads the twin exactly as it reads the hardware. The twin's F/T channel already
applies the sensor's rate, noise and bias (:mod:`hil_lab_twin.ft`), so the RDT server
adds none: each record carries the twin's latest reading ``wrench_sensor_in_sensor``.
"""

from __future__ import annotations

from hil_sensors.rdt_sim import RdtSimulator


#: How long the twin's paced RDT thread spins before a record is due [us]. The standalone simulator
#: spins 150 us for sub-10-us send times (latency benchmarks); in the twin that spin holds the GIL
#: the twin's physics and ROS thread need, 15 % of a core per 1 kHz stream, and a record sent by
#: select()'s wake-up (tens of us late) is still on its absolute schedule, so the rate is exact.
TWIN_SPIN_US = 0.0


def rdt_server(twin, sensor: str, port: int = 0, rate_hz: float | None = None, host: str = '127.0.0.1',
               records_per_packet: int = 1, paced: bool = True) -> RdtSimulator:
    """A started :class:`RdtSimulator` streaming ``sensor`` of ``twin`` (stop() it when done).

    ``rate_hz`` defaults to the twin sensor's sample rate. ``host`` must stay a loopback
    address unless the lab explicitly wants the stream on its network. ``paced=False``: the
    caller sends each sample with ``emit()`` when the twin's simulated clock makes it due.
    Paced, the thread waits in ``select`` without spinning (:data:`TWIN_SPIN_US`).
    """
    source = twin.wrench_source(sensor)
    channel_rate = twin.config_for_sensor(sensor).rate_hz
    server = RdtSimulator(lambda t: tuple(float(v) for v in source()[0]), host=host, port=port,
                          rate_hz=rate_hz or channel_rate, records_per_packet=records_per_packet, paced=paced,
                          spin_us=TWIN_SPIN_US)
    return server.start()
