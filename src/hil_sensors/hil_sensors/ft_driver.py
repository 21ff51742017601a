"""F/T driver core: the RDT client, the processing chain and the safety logic, without rclpy.

:class:`FtDriver` owns one UDP socket. :meth:`FtDriver.poll` waits until the socket is
readable, then **drains** it: every datagram waiting in the kernel is read and handled
at once (sequence accounting, overload check, :class:`~hil_sensors.processing.WrenchChain`), and only the
newest sample is offered for publication. Nothing is queued in user space, so a slow
consumer never makes the published wrench lag: it only publishes less often.

Each datagram carries the kernel's receive time (``SO_TIMESTAMPNS``), which stamps the
sample and is the start of the latency the benchmark reports.

The ROS node (:mod:`hil_sensors.ft_sensor_node`) is a thin shell around this class; the
tests, the fuzz test and the benchmark drive it directly too.
"""

from __future__ import annotations

import ipaddress
import math
import select
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hil_common.freshness import NO_DATA, OK, RECOVERING, STALE, WAITING, InputWatch
from hil_common.params import Param, ParameterError, validate
from hil_sensors import rdt
from hil_sensors.processing import (AXES, FaultLatch, LowPassFilter, RateMeter, ToolGravity, WrenchChain,
                                    WrenchTransform, all_finite, overload_axis)
from hil_common.errors import ConfigError, InputError

# Linux: SO_TIMESTAMPNS (== SCM_TIMESTAMPNS); Python 3.11 does not export the constant.
SO_TIMESTAMPNS = getattr(socket, 'SO_TIMESTAMPNS', 35)
_TIMESPEC = struct.Struct('@qq')
RECV_SIZE = rdt.RECORD_SIZE * rdt.MAX_RECORDS_PER_PACKET + 1


# --------------------------------------------------------------------------- parameters

def check_ipv4(value: str) -> str | None:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return f'{value!r} is not an IPv4 address'
    return None


def check_nonempty(value: str) -> str | None:
    return None if value.strip() else 'must not be empty'


def check_unit_quaternion(value: list) -> str | None:
    n = math.sqrt(sum(v * v for v in value))
    return None if abs(n - 1.0) < 1e-3 else f'quaternion [x, y, z, w] must have norm 1, got {n:.6g}'


def check_force_unit(value: str) -> str | None:
    try:
        rdt.unit_scale(value, rdt.FORCE_UNITS, 'force')
    except rdt.CalibrationError as exc:
        return str(exc)
    return None


def check_torque_unit(value: str) -> str | None:
    try:
        rdt.unit_scale(value, rdt.TORQUE_UNITS, 'torque')
    except rdt.CalibrationError as exc:
        return str(exc)
    return None


PARAMS: tuple[Param, ...] = (
    Param('sensor_ip', '127.0.0.1', 'IPv4 address of the Net F/T sensor (or of the RDT simulator)', check=check_ipv4),
    Param('sensor_port', rdt.RDT_PORT, 'RDT UDP port of the sensor', min=1, max=65535),
    Param('local_port', 0, 'local UDP port the driver sends from and receives on (0: any free port)', min=0, max=65535),
    Param('rdt_mode', 'realtime', 'realtime: one record per datagram; buffered: several records per datagram',
          choices=('realtime', 'buffered')),
    Param('sensor_rate_hz', 0.0, 'RDT output rate set on the sensor (designs the filter, stamps buffered records); '
          '0: measure it on the stream and design the filter for the measured rate (the processed wrench is withheld '
          'for the first rate_measure_s); > 0: a measured rate off by more than rate_tolerance latches a fault',
          min=0.0, max=100000.0),
    Param('rate_tolerance', 0.25, 'relative difference between the measured and the declared sensor_rate_hz that '
          'latches a rate fault when two successive measurement windows show it', min=0.001, max=10.0),
    Param('rate_measure_s', 0.25, 'stream time over which the rate is measured at start', min=0.01, max=60.0),
    Param('publish_rate_hz', 0.0, 'maximum publication rate of the wrench topics; 0 publishes every new sample',
          min=0.0, max=100000.0),
    Param('sensor_clock_stamps', False, "stamp each record with its ft_sequence times the sensor period "
          '(needs sensor_rate_hz > 0) instead of its arrival: for a sensor that counts its samples on the node\'s '
          "clock from t = 0, i.e. the lab twin on its simulated clock (use_sim_time; refused otherwise). Each "
          'sample then carries the time it was taken, however late the driver reads it'),
    Param('sensor_frame', 'ft_sensor', 'frame_id of the raw wrench (and of the processed one without target_frame)',
          check=check_nonempty),
    Param('calibration.source', 'parameters',
          "'parameters': use calibration.counts_per_*; 'sensor': read http://<sensor_ip>/netftapi2.xml at start-up",
          choices=('parameters', 'sensor')),
    Param('calibration.counts_per_force', 1000000.0, 'counts per calibration.force_unit', min=1e-9),
    Param('calibration.counts_per_torque', 1000000.0, 'counts per calibration.torque_unit', min=1e-9),
    Param('calibration.force_unit', 'N', 'unit of counts_per_force (N, kN, lbf, klbf, g, kg)', check=check_force_unit),
    Param('calibration.torque_unit', 'Nm', 'unit of counts_per_torque (Nm, N-mm, kN-m, lbf-in, lbf-ft, ...)',
          check=check_torque_unit),
    Param('calibration.http_port', 80, 'HTTP port of the calibration page', min=1, max=65535),
    Param('calibration.timeout_s', 2.0, 'timeout reading the calibration page', min=0.01, max=60.0),
    Param('software_bias.enabled', True, 'subtract the software bias (tare) taken with the tare service'),
    Param('software_bias.samples', 100, 'samples averaged by one tare', min=1, max=1000000),
    Param('software_bias.on_start', False, 'tare once when streaming starts'),
    Param('software_bias.timeout_s', 2.0, 'a tare fails if it has not collected its samples within this time',
          min=0.01, max=600.0),
    Param('hardware_bias.on_start', False, 'send the hardware bias command (0x0042) when streaming starts'),
    Param('low_pass.enabled', True, 'low-pass filter the processed wrench'),
    Param('low_pass.cutoff_hz', 200.0, 'cut-off frequency of the low-pass filter (< sensor_rate_hz / 2)', min=1e-3),
    Param('low_pass.order', 2, 'order of the Butterworth low-pass filter (1 or 2)', min=1, max=2),
    Param('gravity_compensation.enabled', False, "subtract the tool's weight using the pose input's orientation"),
    Param('gravity_compensation.tool_mass_kg', 0.0, 'mass of the tool carried by the sensor', min=0.0, max=10000.0),
    Param('gravity_compensation.tool_com_m', [0.0, 0.0, 0.0], "tool's centre of mass in the sensor frame", length=3),
    Param('gravity_compensation.gravity_mps2', [0.0, 0.0, -9.80665],
          'gravity vector in the frame the pose input is expressed in', length=3),
    Param('gravity_compensation.sensor_in_flange_xyzw', [0.0, 0.0, 0.0, 1.0],
          "rotation of the sensor frame in the pose input's frame (e.g. the flange), quaternion x y z w",
          length=4, check=check_unit_quaternion),
    Param('gravity_compensation.pose_topic', 'flange_pose',
          'geometry_msgs/PoseStamped: orientation of the flange (the sensor mount) in the gravity frame',
          check=check_nonempty),
    Param('deadband.enabled', False, 'zero each axis of the processed wrench inside its band (after the filter), '
          'so an admittance does not integrate sensor noise'),
    Param('deadband.widths', [0.25, 0.25, 0.25, 0.015, 0.015, 0.015],
          'half-width of the band per axis [N x3, N m x3] (several noise standard deviations); 0 passes an axis',
          length=6, min=0.0),
    Param('target_frame.enabled', False, 'express the processed wrench in a constant target frame'),
    Param('target_frame.frame_id', 'client_com', 'frame_id of the processed wrench when target_frame.enabled',
          check=check_nonempty),
    Param('target_frame.sensor_in_target_xyz_m', [0.0, 0.0, 0.0],
          'position of the sensor origin in the target frame (pose_sensor_in_target)', length=3),
    Param('target_frame.sensor_in_target_xyzw', [0.0, 0.0, 0.0, 1.0],
          'rotation of the sensor frame in the target frame, quaternion x y z w', length=4, check=check_unit_quaternion),
    Param('overload.enabled', True, 'latch a fault when any raw axis exceeds its limit'),
    Param('overload.limits', [500.0, 500.0, 1500.0, 50.0, 50.0, 50.0],
          'per-axis limits |Fx| |Fy| |Fz| (N) |Tx| |Ty| |Tz| (Nm) on the raw wrench', length=6, min=1e-9),
    Param('stale_timeout_ms', 100.0, 'latch a fault when no valid sample arrived for this long (once the first '
          'sample has arrived)', min=1.0, max=600000.0),
    Param('start_timeout_s', 10.0, 'waiting for the first sample is not a fault; after this long the status says '
          'clearly that no sample arrived (still not latched: the first sample ends it)', min=0.01, max=3600.0),
    Param('stale_recovery.auto', True, 'clear a stale fault on its own once samples have been healthy for '
          'stale_recovery.healthy_s (false: only the reset_fault service clears it)'),
    Param('stale_recovery.healthy_s', 1.0, 'healthy stream time before a stale fault clears on its own',
          min=0.0, max=3600.0),
    Param('reject_status_errors', True, 'drop records whose status word is not 0 (they are counted and reported)'),
    Param('diagnostics_period_s', 1.0, 'period of the diagnostics publication', min=0.01, max=3600.0),
    Param('socket_rcvbuf_bytes', 0, 'SO_RCVBUF of the UDP socket (0: system default); bounds the worst-case backlog',
          min=0, max=1 << 30),
    Param('autostart', True, 'configure and activate the lifecycle node on start'),
)


def check_parameters(values: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a full parameter set (defaults for missing ones); errors name the parameter."""
    cfg = validate(PARAMS, values)
    if cfg['sensor_clock_stamps'] and not cfg['sensor_rate_hz'] > 0:
        raise ParameterError("parameter 'sensor_clock_stamps': needs a declared sensor_rate_hz > 0 (the period the "
                             "sensor's ft_sequence counts)")
    if cfg['low_pass.enabled'] and cfg['sensor_rate_hz'] > 0 and not cfg['low_pass.cutoff_hz'] < 0.5 * cfg['sensor_rate_hz']:
        raise ParameterError(
            f"parameter 'low_pass.cutoff_hz': {cfg['low_pass.cutoff_hz']} Hz must be below half of "
            f"sensor_rate_hz ({0.5 * cfg['sensor_rate_hz']} Hz)")
    if cfg['gravity_compensation.enabled'] and cfg['gravity_compensation.tool_mass_kg'] <= 0.0:
        raise ParameterError("parameter 'gravity_compensation.tool_mass_kg': must be > 0 when "
                             'gravity_compensation.enabled is true')
    unknown = set(values) - {p.name for p in PARAMS}
    if unknown:
        raise ParameterError(f'parameter {sorted(unknown)[0]!r}: unknown parameter')
    return cfg


def resolve_calibration(cfg: Mapping[str, Any]) -> rdt.Calibration:
    """Calibration from the parameters, or read from the sensor's page."""
    if cfg['calibration.source'] == 'sensor':
        return rdt.fetch_calibration(cfg['sensor_ip'], cfg['calibration.http_port'], cfg['calibration.timeout_s'])
    return rdt.Calibration(cfg['calibration.counts_per_force'], cfg['calibration.counts_per_torque'],
                           cfg['calibration.force_unit'], cfg['calibration.torque_unit'], source='parameters')


# --------------------------------------------------------------------------- samples and statistics

@dataclass
class Sample:
    """The newest accepted record, processed."""

    rdt_sequence: int
    status: int
    stamp_ns: int          # sample time (kernel receive time, back-dated within a buffered packet)
    arrival_ns: int        # kernel receive time of its datagram
    raw: list[float]       # scaled, sensor frame
    processed: list[float]  # biased, gravity-compensated, filtered, sensor frame


class LatencyStats:
    """Ring buffer of latencies (ns) for p50/p99."""

    def __init__(self, size: int = 20000):
        self._buf = np.zeros(size, dtype=np.int64)
        self._n = 0

    def add(self, ns: int) -> None:
        self._buf[self._n % len(self._buf)] = ns
        self._n += 1

    def clear(self) -> None:
        self._n = 0

    @property
    def count(self) -> int:
        return self._n

    def values(self) -> np.ndarray:
        return self._buf[:min(self._n, len(self._buf))].copy()

    def percentiles(self, qs=(50, 99)) -> list[float]:
        v = self.values()
        if not len(v):
            return [math.nan for _ in qs]
        return [float(x) for x in np.percentile(v, qs)]


COUNTER_NAMES = ('datagrams', 'records', 'accepted', 'malformed', 'foreign', 'status_error_records',
                 'nonfinite', 'published', 'overloads', 'stale_events', 'stale_recoveries', 'start_timeouts',
                 'saturation_events', 'tares', 'hardware_biases', 'pose_updates', 'pose_rejected', 'start_requests')

#: The fastest RDT output rate of a Net F/T (ATI 9620-05-NET FT manual: 7000 Hz); bounds the
#: sequence plausibility check until the rate is known.
MAX_RDT_RATE_HZ = 7000.0
#: Spacing assumed for the records of one buffered datagram until the rate is measured.
ASSUMED_RATE_HZ = 1000.0


# --------------------------------------------------------------------------- node policy (no rclpy)

#: Counters whose growth between two diagnostics reports is a warning.
PROBLEM_COUNTERS = ('seq_lost', 'malformed', 'status_error_records', 'nonfinite')


def diagnostic_status(snap: Mapping[str, Any], previous: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(level, message)`` of the driver's diagnostics from a :meth:`FtDriver.snapshot` and the
    previous report's; ``level`` is the name of a ``diagnostic_msgs/DiagnosticStatus`` level
    (``'OK'``, ``'WARN'``, ``'ERROR'``). The first that applies, most severe first: a latched
    fault, a sensor status error, no sample since the start timeout (ERROR); waiting for the
    first sample, measuring the rate, waiting for the pose input, new lost/malformed/error
    records, not streaming (WARN); else streaming (OK)."""
    if snap['fault_active']:
        return 'ERROR', f"FAULT {snap['fault_reason']}: {snap['fault_detail']}"
    if snap['last_status']:
        return 'ERROR', 'sensor status: ' + ', '.join(snap['last_status_bits'])
    if snap['stream_state'] == NO_DATA:
        return 'ERROR', snap['stream_detail']
    if snap['stream_state'] == WAITING:
        return 'WARN', snap['stream_detail']
    if snap['filter_pending']:
        return 'WARN', 'measuring the stream rate (processed wrench withheld)'
    if snap['gravity_ready'] is False:
        return 'WARN', 'waiting for the pose input (processed wrench withheld)'
    if previous is not None and any(snap[k] > previous[k] for k in PROBLEM_COUNTERS):
        return 'WARN', 'lost, malformed or error records since the last report'
    if not snap['streaming']:
        return 'WARN', 'not streaming'
    return 'OK', 'streaming'


class PublishDecimator:
    """``publish_rate_hz`` (0: every new sample): a sample whose stamp is closer than
    ``1 / publish_rate_hz`` to the last published one is skipped; a newer one goes out later
    (the driver never queues, so skipping only publishes less often, never older data).

    ``every_n_records`` > 0 decimates by the records' RDT sequence instead (every n-th record):
    on the lab twin's simulated clock the records of one tick arrive before or after that
    tick's ``/clock``, so their stamps cannot tell the ticks apart.
    """

    def __init__(self, publish_rate_hz: float, every_n_records: int = 0):
        self.every_n = int(every_n_records)
        self.min_interval_ns = int(1e9 / publish_rate_hz) if publish_rate_hz > 0 and not self.every_n else 0
        self.last_ns = 0
        self.last_sequence: int | None = None
        self.any_published = False

    def admit(self, stamp_ns: int, sequence: int | None = None) -> bool:
        if self.every_n and sequence is not None:
            return self.last_sequence is None or (sequence - self.last_sequence) % 2**32 >= self.every_n
        return not self.min_interval_ns or stamp_ns - self.last_ns >= self.min_interval_ns

    def published(self, stamp_ns: int, sequence: int | None = None) -> None:
        self.last_ns = stamp_ns
        self.last_sequence = sequence
        self.any_published = True

    def idle_ns(self, now_ns: int, margin_ns: int) -> int:
        """How long a receive loop may sleep at ``now_ns`` before the next publication can be due
        (less ``margin_ns``), so that it reads the records in between in one batch instead of waking
        for each (by stamp only; 0 without a publish rate or before the first publication)."""
        if not self.min_interval_ns or not self.any_published:
            return 0
        return max(0, self.last_ns + self.min_interval_ns - margin_ns - now_ns)


def wrench_chain(cfg: Mapping[str, Any], rate_hz: float | None) -> WrenchChain:
    """The processing chain a driver with parameters ``cfg`` (:func:`check_parameters`) runs on samples at
    ``rate_hz`` (None or 0: not known yet, no low-pass until it is measured). One definition for the driver
    and for lockstep runners that read a twin's sensor as the driver would."""
    return WrenchChain(
        gravity=(ToolGravity(cfg['gravity_compensation.tool_mass_kg'], cfg['gravity_compensation.tool_com_m'],
                             cfg['gravity_compensation.gravity_mps2'], cfg['gravity_compensation.sensor_in_flange_xyzw'])
                 if cfg['gravity_compensation.enabled'] else None),
        low_pass=(LowPassFilter(cfg['low_pass.cutoff_hz'], rate_hz, cfg['low_pass.order'])
                  if cfg['low_pass.enabled'] and rate_hz else None),
        deadband=cfg['deadband.widths'] if cfg['deadband.enabled'] else None,
        transform=(WrenchTransform(cfg['target_frame.sensor_in_target_xyz_m'], cfg['target_frame.sensor_in_target_xyzw'])
                   if cfg['target_frame.enabled'] else None),
        tare_enabled=cfg['software_bias.enabled'])


# --------------------------------------------------------------------------- driver

class FtDriver:
    """One Net F/T (or simulator) over RDT/UDP, with the processing chain and safety latch."""

    def __init__(self, cfg: Mapping[str, Any], calibration: rdt.Calibration | None = None,
                 clock_ns: Callable[[], int] = time.time_ns, kernel_timestamps: bool = True):
        # clock_ns: the lab's clock (the twin's simulated time under use_sim_time); the kernel's
        # receive stamps are on the system clock, so they are used only with that clock
        self.cfg = dict(cfg)
        self.clock_ns = clock_ns
        self.want_kernel_timestamps = kernel_timestamps
        self.calibration = calibration if calibration is not None else resolve_calibration(self.cfg)
        self.scales = self.calibration.scales()
        self.sensor_addr = (self.cfg['sensor_ip'], self.cfg['sensor_port'])
        declared = self.cfg['sensor_rate_hz']
        self.rate_hz: float | None = declared or None         # the rate the filter is designed for
        self.measured_rate_hz: float | None = None
        self._rate_mismatch_seen = False                        # a first window off the declared rate
        self.rate_meter = RateMeter(self.cfg['rate_measure_s'])
        self.period_ns = int(round(1e9 / (declared or ASSUMED_RATE_HZ)))
        self.stale_ns = int(self.cfg['stale_timeout_ms'] * 1e6)
        self.watch = InputWatch('stream', self.cfg['stale_timeout_ms'] * 1e-3, self.cfg['start_timeout_s'],
                                self.cfg['stale_recovery.healthy_s'], self.cfg['stale_recovery.auto'])
        # while stale, the start command is re-sent this often
        self.restart_ns = max(self.stale_ns, 500_000_000)
        self.last_start_ns = 0
        self.tracker = rdt.SequenceTracker(rate_hz=declared or MAX_RDT_RATE_HZ)
        self.sensor_clock_stamps = bool(self.cfg.get('sensor_clock_stamps', False))
        if self.sensor_clock_stamps and not declared:
            raise ConfigError("sensor_clock_stamps needs a declared sensor_rate_hz (the period the ft_sequence counts)")
        self.chain = wrench_chain(self.cfg, declared)
        self.filter_pending = self.cfg['low_pass.enabled'] and not declared   # designed once the rate is measured
        self.output_frame = self.cfg['target_frame.frame_id'] if self.chain.transform else self.cfg['sensor_frame']
        self.limits = tuple(self.cfg['overload.limits']) if self.cfg['overload.enabled'] else None
        self.reject_status = self.cfg['reject_status_errors']
        self.fault = FaultLatch()
        self.counters = dict.fromkeys(COUNTER_NAMES, 0)
        self.latency = LatencyStats()
        self.newest: Sample | None = None
        self.has_new_sample = False
        self.last_status = 0
        self.status_seen = 0          # OR of every non-zero status word since start
        self.last_valid_ns = 0        # kernel time of the newest accepted record
        self.streaming = False
        self.stream_started_ns = 0
        self.sock: socket.socket | None = None
        self.kernel_timestamps = False
        self._fault_events: list[tuple[bool, str, str]] = []
        self._latch_causes: set[str] = set()   # every cause tripped since the latch (auto-clear only for 'stale')
        self.notices: list[str] = []           # one-off reports for the log (start timeout, rate measured)
        self._stale_seen = 0

    # ----------------------------------------------------------------- chain report
    def describe_chain(self) -> list[str]:
        """One line per processing step, switched on or off (logged when the node starts)."""
        c, ch = self.calibration, self.chain
        lines = [f'scale: {c.counts_per_force:g} counts/{c.force_unit}, {c.counts_per_torque:g} counts/{c.torque_unit} '
                 f'(from {c.source})',
                 f"rdt: {self.cfg['rdt_mode']} streaming from {self.sensor_addr[0]}:{self.sensor_addr[1]} "
                 + (f"at {self.cfg['sensor_rate_hz']:g} Hz (declared; checked against the measured rate), publish "
                    if self.cfg['sensor_rate_hz'] else 'at the rate measured on the stream, publish ')
                 + (f"at most {self.cfg['publish_rate_hz']:g} Hz" if self.cfg['publish_rate_hz'] else 'every new sample'),
                 'hardware bias: ' + ('on start' if self.cfg['hardware_bias.on_start'] else 'on request (service)'),
                 'software bias (tare): ' + (f"ON, {self.cfg['software_bias.samples']} samples"
                                             + (', on start' if self.cfg['software_bias.on_start'] else '')
                                             if self.chain.tare_enabled else 'OFF'),
                 'gravity compensation: ' + (f'ON, {ch.gravity.describe()}' if ch.gravity else 'OFF'),
                 'low-pass filter: ' + (f'ON, {ch.filter.describe()}' if ch.filter else
                                        f"ON, cut-off {self.cfg['low_pass.cutoff_hz']:g} Hz, designed for the rate "
                                        f"measured over the first {self.cfg['rate_measure_s']:g} s" if self.filter_pending
                                        else 'OFF'),
                 'dead band: ' + (f'ON, widths {list(ch.deadband)}' if ch.deadband else 'OFF'),
                 'target frame: ' + (f"ON, {self.output_frame}: {ch.transform.describe()}" if ch.transform
                                     else f"OFF (processed wrench in {self.output_frame})"),
                 'overload latch: ' + (f'ON, limits {list(self.limits)}' if self.limits else 'OFF'),
                 f"stale latch: ON, {self.cfg['stale_timeout_ms']:g} ms once the first sample has arrived (start "
                 f"timeout {self.cfg['start_timeout_s']:g} s reported, not latched; start command re-sent every "
                 f"{self.restart_ns / 1e9:g} s while waiting or stale); "
                 + (f"cleared on its own after {self.cfg['stale_recovery.healthy_s']:g} s of healthy samples"
                    if self.cfg['stale_recovery.auto'] else 'cleared by reset_fault only'),
                 'status errors: ' + ('records dropped, counted' if self.reject_status else 'counted, records used')]
        return lines

    # ----------------------------------------------------------------- socket
    def open(self) -> None:
        if self.sock is not None:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            local_ip = '127.0.0.1' if ipaddress.IPv4Address(self.sensor_addr[0]).is_loopback else '0.0.0.0'
            sock.bind((local_ip, self.cfg['local_port']))
            if self.cfg['socket_rcvbuf_bytes']:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.cfg['socket_rcvbuf_bytes'])
            self.kernel_timestamps = False
            if self.want_kernel_timestamps:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                    self.kernel_timestamps = True
                except OSError:
                    pass
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock = sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.streaming = False

    @property
    def local_address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    def send_command(self, command: int, sample_count: int = 0) -> None:
        self.sock.sendto(rdt.encode_request(command, sample_count), self.sensor_addr)

    def start_streaming(self) -> None:
        """Send the start command; sequence accounting and filter restart with the stream."""
        now = self.clock_ns()
        if self.cfg['hardware_bias.on_start']:
            self.hardware_bias()
        self.tracker.reset()
        if self.chain.filter:
            self.chain.filter.reset()
        self.rate_meter.reset()
        self.newest = None
        self.has_new_sample = False
        self.streaming = True
        self.stream_started_ns = now
        self.last_valid_ns = 0
        self.watch.start(now * 1e-9)
        self._stale_seen = self.watch.stale_events
        self._send_start(now)
        if self.chain.tare_enabled and self.cfg['software_bias.on_start']:
            self.chain.tare.start(self.cfg['software_bias.samples'])

    def _send_start(self, now_ns: int) -> None:
        cmd = rdt.CMD_START_BUFFERED if self.cfg['rdt_mode'] == 'buffered' else rdt.CMD_START_REALTIME
        self.last_start_ns = now_ns
        self.counters['start_requests'] += 1
        self.send_command(cmd, 0)

    def stop_streaming(self) -> None:
        if self.sock is not None:
            self.send_command(rdt.CMD_STOP, 0)
        self.streaming = False

    def hardware_bias(self) -> None:
        """Ask the sensor to zero itself; the software tare is cleared (it would double-count)."""
        self.send_command(rdt.CMD_SET_HARDWARE_BIAS, 0)
        self.counters['hardware_biases'] += 1
        self.chain.tare.clear()

    # ----------------------------------------------------------------- receive path
    def wait_readable(self, timeout_s: float) -> bool:
        if self.sock is None:
            time.sleep(timeout_s)
            return False
        r, _, _ = select.select([self.sock], [], [], max(0.0, timeout_s))
        return bool(r)

    def poll(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for data, drain the socket, check staleness.

        Returns the number of datagrams handled."""
        self.wait_readable(timeout_s)
        n = self.drain()
        self.check_stale(self.clock_ns())
        return n

    def drain(self) -> int:
        """Read and handle every datagram waiting in the socket; returns how many."""
        sock = self.sock
        if sock is None:
            return 0
        n = 0
        clock = self.clock_ns
        while True:
            try:
                data, anc, _flags, addr = sock.recvmsg(RECV_SIZE, 64)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                # e.g. ECONNREFUSED reported for an earlier send: not data, keep draining
                continue
            arrival = 0
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
                    sec, nsec = _TIMESPEC.unpack_from(payload)
                    arrival = sec * 1_000_000_000 + nsec
            self.handle_datagram(data, addr, arrival or clock())
            n += 1
        return n

    def handle_datagram(self, data: bytes, addr, arrival_ns: int) -> None:
        """Handle one datagram. Never raises for any content (see the fuzz test)."""
        c = self.counters
        c['datagrams'] += 1
        if addr is None or addr[0] != self.sensor_addr[0] or addr[1] != self.sensor_addr[1]:
            c['foreign'] += 1
            return
        try:
            records = list(rdt.iter_raw_records(data))
        except rdt.RdtFormatError:
            c['malformed'] += 1
            return
        n = len(records)
        for i, rec in enumerate(records):
            self._handle_record(rec, arrival_ns - (n - 1 - i) * self.period_ns, arrival_ns)

    def _handle_record(self, rec, stamp_ns: int, arrival_ns: int) -> None:
        c = self.counters
        c['records'] += 1
        seq, status = rec[0], rec[2]
        kind = self.tracker.observe(seq, stamp_ns)
        if kind is not rdt.SEQ_NEW and kind is not rdt.SEQ_RESYNC:
            return
        if kind is rdt.SEQ_RESYNC:
            self.rate_meter.reset()
        if self.sensor_clock_stamps:
            stamp_ns = rdt.time_of_ft_sequence(rec[1], self.cfg['sensor_rate_hz'])
        if self.rate_meter.rate_hz is None and self.rate_meter.add(seq, stamp_ns) is not None:
            self._rate_measured(self.rate_meter.rate_hz, arrival_ns)
        if status:
            c['status_error_records'] += 1
            self.last_status = status
            self.status_seen |= status
            if status & rdt.STATUS_SATURATION:
                c['saturation_events'] += 1
                self._trip('saturation', f'sensor reports saturation or A/D error (status 0x{status:08x}: '
                           f'{", ".join(rdt.decode_status(status))})', arrival_ns)
            if self.reject_status:
                return
        else:
            self.last_status = 0
        s = self.scales
        raw = [rec[3] * s[0], rec[4] * s[1], rec[5] * s[2], rec[6] * s[3], rec[7] * s[4], rec[8] * s[5]]
        if self.limits is not None:
            axis = overload_axis(raw, self.limits)
            if axis >= 0:
                c['overloads'] += 1
                self._trip('overload', f'{AXES[axis]} = {raw[axis]:.6g} exceeds the limit {self.limits[axis]:.6g}',
                           arrival_ns)
        processed = self.chain.process(raw)
        c['tares'] = self.chain.tare.count
        if processed is None:
            c['nonfinite'] += 1
            return
        c['accepted'] += 1
        self.last_valid_ns = arrival_ns
        self.watch.sample(arrival_ns * 1e-9)
        self.newest = Sample(seq, status, stamp_ns, arrival_ns, raw, processed)
        self.has_new_sample = True

    # ----------------------------------------------------------------- safety
    def _trip(self, reason: str, detail: str, now_ns: int) -> None:
        if self.fault.trip(reason, detail, now_ns):
            self._fault_events.append((True, reason, detail))
        self._latch_causes.add(reason)

    def _clear(self, message: str) -> str:
        was = f'{self.fault.reason}: {self.fault.detail}'
        self.fault.reset()
        self._latch_causes = set()
        if self.chain.filter:
            self.chain.filter.reset()
        self._fault_events.append((False, 'reset', f'{message} (was {was})'))
        return was

    def _rate_measured(self, rate: float, now_ns: int) -> None:
        """The stream's rate is known: check it against the declared one, or design the filter for it."""
        self.measured_rate_hz = rate
        self.tracker.rate_hz = rate
        declared, tol, cutoff = self.cfg['sensor_rate_hz'], self.cfg['rate_tolerance'], self.cfg['low_pass.cutoff_hz']
        if declared:
            if abs(rate - declared) > tol * declared and not self._rate_mismatch_seen:
                # one window can be skewed by the sender's scheduling (a sensor simulator in a busy
                # process stalls, then catches up): measure once more, latch only if it persists
                self._rate_mismatch_seen = True
                self.measured_rate_hz = None
                self.rate_meter.restart()
                self.notices.append(f'stream rate measured: {rate:.1f} Hz, off sensor_rate_hz {declared:g} Hz '
                                    f'by more than {tol:.0%}: measuring again')
                return
            if abs(rate - declared) > tol * declared:
                acts = f'; the {cutoff:g} Hz low-pass acts at {cutoff * rate / declared:.4g} Hz' if self.chain.filter else ''
                self._trip('rate', f'measured stream rate {rate:.1f} Hz differs from sensor_rate_hz {declared:g} Hz '
                           f'by more than {tol:.0%}{acts}: set sensor_rate_hz to the rate of the sensor', now_ns)
            self.notices.append(f'stream rate measured: {rate:.1f} Hz (sensor_rate_hz {declared:g} Hz)')
            return
        self.rate_hz = rate
        self.period_ns = int(round(1e9 / rate))
        if self.filter_pending:
            if not cutoff < 0.5 * rate:
                self._trip('rate', f'low_pass.cutoff_hz {cutoff:g} Hz is not below half the measured stream rate '
                           f'{rate:.1f} Hz', now_ns)
                return
            self.chain.filter = LowPassFilter(cutoff, rate, self.cfg['low_pass.order'])
            self.filter_pending = False
        self.notices.append(f'stream rate measured: {rate:.1f} Hz'
                            + (f'; low-pass {self.chain.filter.describe()}' if self.chain.filter else ''))

    def check_stale(self, now_ns: int) -> bool:
        """Judge the stream's freshness (:class:`hil_common.freshness.InputWatch`): waiting for the
        first sample is no fault (after ``start_timeout_s`` it is reported, not latched); a stale
        stream latches ``stale``, which clears on its own after ``stale_recovery.healthy_s`` of
        healthy samples (``stale_recovery.auto``) unless another cause latched too."""
        if not self.streaming:
            return False
        now_s = now_ns * 1e-9
        before = self.watch.state
        state = self.watch.update(now_s)
        if state == NO_DATA and before != NO_DATA:
            self.counters['start_timeouts'] += 1
            self.notices.append(f'{self.watch.describe(now_s)} from {self.sensor_addr[0]}:{self.sensor_addr[1]}')
        if self.watch.stale_events > self._stale_seen:
            self._stale_seen = self.watch.stale_events
            self.counters['stale_events'] += 1
            age = self.watch.age(now_s)
            self._trip('stale', f'no sample for {age * 1e3:.1f} ms (limit {self.cfg["stale_timeout_ms"]:g} ms)'
                       if state == STALE else 'a gap longer than stale_timeout_ms', now_ns)
        if state == OK and self.fault.active and self._latch_causes == {'stale'}:
            self.counters['stale_recoveries'] += 1
            self._clear(f"cleared on its own after {self.cfg['stale_recovery.healthy_s']:g} s of healthy samples")
        if state in (WAITING, NO_DATA, STALE) and now_ns - self.last_start_ns >= self.restart_ns:
            # The sensor rebooted, came up after us or lost our request (UDP): ask again.
            # Its sequence restarts at 1, so the accounting restarts too.
            self.tracker.reset()
            try:
                self._send_start(now_ns)
            except OSError:
                pass
        return state == STALE

    def take_fault_events(self) -> list[tuple[bool, str, str]]:
        """(latched?, reason, detail) events since the last call, for the fault topic."""
        events, self._fault_events = self._fault_events, []
        return events

    def reset_fault(self) -> tuple[bool, str]:
        """Clear the latch if its cause is gone; returns (success, message)."""
        if not self.fault.active:
            return True, 'no fault latched'
        now = self.clock_ns()
        if self.streaming:
            state = self.watch.update(now * 1e-9)
            if state == STALE or (state in (WAITING, NO_DATA) and 'stale' in self._latch_causes):
                age = self.watch.age(now * 1e-9)
                return False, (f'cannot reset: stream still stale (no sample for {age * 1e3:.1f} ms)' if age < math.inf
                               else 'cannot reset: stream still stale (no sample since streaming started)')
            self.watch.reset(now * 1e-9)
        if self.newest is not None and self.limits is not None:
            axis = overload_axis(self.newest.raw, self.limits)
            if axis >= 0:
                return False, (f'cannot reset: {AXES[axis]} = {self.newest.raw[axis]:.6g} still exceeds '
                               f'{self.limits[axis]:.6g}')
        if self.last_status & rdt.STATUS_SATURATION:
            return False, 'cannot reset: sensor still reports saturation'
        if 'rate' in self._latch_causes:
            # measure again (a mismatch that persists latches again after rate_measure_s)
            self.rate_meter.restart()
            self._rate_mismatch_seen = True
            if not self.cfg['sensor_rate_hz'] and self.cfg['low_pass.enabled']:
                self.chain.filter, self.filter_pending = None, True
        was = self._clear('cleared')
        return True, f'fault cleared (was {was})'

    # ----------------------------------------------------------------- inputs from the node
    def request_tare(self, samples: int | None = None) -> int:
        """Start a tare; returns the tare counter value that marks its completion."""
        self.chain.tare.start(samples or self.cfg['software_bias.samples'])
        return self.chain.tare.count + 1

    def set_flange_orientation(self, xyzw: Sequence[float]) -> bool:
        """Orientation input for gravity compensation; False (and counted) if invalid."""
        if self.chain.gravity is None:
            return False
        try:
            if not all_finite([float(v) for v in xyzw]):
                raise InputError('non-finite quaternion')
            self.chain.gravity.set_flange_orientation(xyzw)
        except (ValueError, TypeError):
            self.counters['pose_rejected'] += 1
            return False
        self.counters['pose_updates'] += 1
        return True

    # ----------------------------------------------------------------- outputs
    def take_sample(self) -> Sample | None:
        """The newest sample if one arrived since the last call."""
        if not self.has_new_sample:
            return None
        self.has_new_sample = False
        return self.newest

    def processed_output(self, sample: Sample) -> list[float] | None:
        """The processed wrench to publish (target frame), or None while it must be withheld:
        a fault is latched, or gravity compensation has no orientation yet."""
        if self.fault.active or self.filter_pending:
            return None
        if self.chain.gravity is not None and not self.chain.gravity.has_orientation:
            return None
        return self.chain.in_target_frame(sample.processed)

    def record_publication(self, sample: Sample, done_ns: int) -> None:
        self.counters['published'] += 1
        self.latency.add(done_ns - sample.arrival_ns)

    def snapshot(self, now_ns: int | None = None) -> dict[str, Any]:
        """Everything diagnostics needs, as plain values."""
        now = self.clock_ns() if now_ns is None else now_ns
        p50, p99 = self.latency.percentiles()
        return {
            **self.counters,
            **{f'seq_{k}': v for k, v in self.tracker.counters().items()},
            'streaming': self.streaming,
            'last_sample_age_ms': (now - self.last_valid_ns) / 1e6 if self.last_valid_ns else math.inf,
            'last_status': self.last_status,
            'last_status_bits': rdt.decode_status(self.last_status),
            'status_bits_seen': rdt.decode_status(self.status_seen),
            'fault_active': self.fault.active,
            'fault_reason': self.fault.reason,
            'fault_detail': self.fault.detail,
            'fault_count': self.fault.count,
            'stream_state': self.watch.state if self.streaming else 'not streaming',
            'stream_detail': self.watch.describe(now * 1e-9),
            'measured_rate_hz': self.measured_rate_hz if self.measured_rate_hz is not None else math.nan,
            'filter_rate_hz': self.chain.filter.sample_rate_hz if self.chain.filter is not None else math.nan,
            'filter_pending': self.filter_pending,
            'bias_active': self.chain.tare.active and self.chain.tare_enabled,
            'bias': list(self.chain.tare.offset),
            'bias_collecting': self.chain.tare.collecting,
            'gravity_ready': self.chain.gravity.has_orientation if self.chain.gravity else None,
            'latency_p50_us': p50 / 1e3,
            'latency_p99_us': p99 / 1e3,
            'kernel_timestamps': self.kernel_timestamps,
        }
