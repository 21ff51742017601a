"""ATI Net F/T "RDT" (Raw Data Transfer) over UDP: codec, status bits, sequence tracking, calibration.

Plain Python, no rclpy. Everything here is pure and deterministic, so the simulator, the
driver and the tests share one definition of the wire format.

Wire format (all big-endian, sensor UDP port 49152):

* request, 8 bytes: ``uint16 header (0x1234), uint16 command, uint32 sample_count``.
  Commands: 0x0000 stop, 0x0002 start real-time streaming, 0x0003 start buffered
  streaming, 0x0042 set hardware bias. ``sample_count`` 0 means "stream until stopped".
* record, 36 bytes: ``uint32 rdt_sequence, uint32 ft_sequence, uint32 status,
  int32 Fx Fy Fz Tx Ty Tz`` (counts). A real-time packet holds one record, a buffered
  packet several; every record has its own ``rdt_sequence``, which restarts at 1 after
  each start command and wraps at 2**32.

Counts become SI with the calibration's counts-per-force and counts-per-torque, either
configured or read from the sensor's page ``http://<ip>/netftapi2.xml`` (``cfgcpf``,
``cfgcpt`` in the units ``scfgfu`` / ``scfgtu``).
"""

from __future__ import annotations

import fractions
import functools
import math
import struct
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterable, Sequence

from hil_common.errors import ConfigError, SensorFault

RDT_PORT = 49152
RDT_HEADER = 0x1234

CMD_STOP = 0x0000
CMD_START_REALTIME = 0x0002
CMD_START_BUFFERED = 0x0003
CMD_SET_HARDWARE_BIAS = 0x0042
COMMAND_NAMES = {
    CMD_STOP: 'stop',
    CMD_START_REALTIME: 'start_realtime',
    CMD_START_BUFFERED: 'start_buffered',
    CMD_SET_HARDWARE_BIAS: 'set_hardware_bias',
}

REQUEST = struct.Struct('>HHI')
RECORD = struct.Struct('>III6i')
REQUEST_SIZE = REQUEST.size  # 8
RECORD_SIZE = RECORD.size  # 36
# A buffered packet never needs more than this many records (the sensor's RDT buffer
# holds at most 40); anything longer is treated as malformed rather than decoded.
MAX_RECORDS_PER_PACKET = 64

UINT32_MASK = 0xFFFFFFFF
INT32_MIN = -2**31
INT32_MAX = 2**31 - 1


class RdtFormatError(SensorFault):
    """A datagram does not follow the RDT layout (length, header or command)."""


# --------------------------------------------------------------------------- requests

@dataclass(frozen=True)
class RdtRequest:
    command: int
    sample_count: int = 0
    header: int = RDT_HEADER

    @property
    def command_name(self) -> str:
        return COMMAND_NAMES.get(self.command, f'unknown_0x{self.command:04x}')


def encode_request(command: int, sample_count: int = 0) -> bytes:
    """The 8-byte request a client sends to the sensor."""
    if command not in COMMAND_NAMES:
        raise ConfigError(f'unknown RDT command 0x{command:04x}')
    if not 0 <= sample_count <= UINT32_MASK:
        raise ConfigError(f'sample_count {sample_count} does not fit uint32')
    return REQUEST.pack(RDT_HEADER, command, sample_count)


def decode_request(data: bytes) -> RdtRequest:
    """Parse a request; raises :class:`RdtFormatError` on wrong length, header or command."""
    if len(data) != REQUEST_SIZE:
        raise RdtFormatError(f'request must be {REQUEST_SIZE} bytes, got {len(data)}')
    header, command, count = REQUEST.unpack(data)
    if header != RDT_HEADER:
        raise RdtFormatError(f'request header 0x{header:04x} is not 0x{RDT_HEADER:04x}')
    if command not in COMMAND_NAMES:
        raise RdtFormatError(f'unknown command 0x{command:04x}')
    return RdtRequest(command, count, header)


# --------------------------------------------------------------------------- records

@dataclass(frozen=True)
class RdtRecord:
    rdt_sequence: int
    ft_sequence: int
    status: int
    counts: tuple[int, int, int, int, int, int]


def ft_sequence_at(t_s: float, rate_hz: float) -> int:
    """The ``ft_sequence`` of a sample taken at ``t_s`` by a sensor that counts its samples on the lab's
    clock from ``t = 0`` (the lab twin on its simulated clock): sample ``k`` is at ``k / rate_hz``
    (modulo 2**32: 49 days at 1 kHz). The inverse is :func:`time_of_ft_sequence`; a real Net F/T's
    ``ft_sequence`` counts its internal samples since power-on and is not on any lab clock."""
    return int(round(t_s * rate_hz)) & UINT32_MASK


def time_of_ft_sequence(ft_sequence: int, rate_hz: float) -> int:
    """The lab-clock time [ns] of a sample whose ``ft_sequence`` counts the sensor's samples at ``rate_hz``
    from ``t = 0`` (:func:`ft_sequence_at`), in integers (no rounding that grows with the count)."""
    num, den = _rate_fraction(rate_hz)
    return (ft_sequence & UINT32_MASK) * 1_000_000_000 * den // num


@functools.lru_cache(maxsize=8)
def _rate_fraction(rate_hz: float) -> tuple[int, int]:
    rate = fractions.Fraction(rate_hz).limit_denominator(1_000_000)
    return rate.numerator, rate.denominator


def encode_record(record: RdtRecord) -> bytes:
    return RECORD.pack(record.rdt_sequence & UINT32_MASK, record.ft_sequence & UINT32_MASK,
                       record.status & UINT32_MASK, *record.counts)


def encode_packet(records: Iterable[RdtRecord]) -> bytes:
    """One datagram holding the records in order (one for real-time, several for buffered)."""
    return b''.join(encode_record(r) for r in records)


def decode_packet(data: bytes) -> list[RdtRecord]:
    """Split a response datagram into records.

    Raises :class:`RdtFormatError` unless the length is a positive multiple of 36 bytes
    and at most :data:`MAX_RECORDS_PER_PACKET` records.
    """
    n, rest = divmod(len(data), RECORD_SIZE)
    if rest or n == 0:
        raise RdtFormatError(f'response length {len(data)} is not a positive multiple of {RECORD_SIZE}')
    if n > MAX_RECORDS_PER_PACKET:
        raise RdtFormatError(f'response holds {n} records, more than {MAX_RECORDS_PER_PACKET}')
    out = []
    for offset in range(0, len(data), RECORD_SIZE):
        seq, ft_seq, status, *counts = RECORD.unpack_from(data, offset)
        out.append(RdtRecord(seq, ft_seq, status, tuple(counts)))
    return out


def iter_raw_records(data: bytes):
    """Fast path of :func:`decode_packet` for the driver: yields plain tuples
    ``(rdt_sequence, ft_sequence, status, c0..c5)``. Validates like decode_packet."""
    n, rest = divmod(len(data), RECORD_SIZE)
    if rest or n == 0:
        raise RdtFormatError(f'response length {len(data)} is not a positive multiple of {RECORD_SIZE}')
    if n > MAX_RECORDS_PER_PACKET:
        raise RdtFormatError(f'response holds {n} records, more than {MAX_RECORDS_PER_PACKET}')
    return RECORD.iter_unpack(data)


def saturate_int32(value: float) -> tuple[int, bool]:
    """Round a count to int32; returns (count, clipped). NaN clips to 0 and reports clipping."""
    if not math.isfinite(value):
        return (0 if math.isnan(value) else (INT32_MAX if value > 0 else INT32_MIN)), True
    v = int(round(value))
    if v > INT32_MAX:
        return INT32_MAX, True
    if v < INT32_MIN:
        return INT32_MIN, True
    return v, False


# --------------------------------------------------------------------------- status word

#: Bits of the Net F/T system status word (ATI Net F/T manual, "system status code").
#: ``(mask, short name, description)``; 0 means healthy.
STATUS_BITS: tuple[tuple[int, str, str], ...] = (
    (1 << 31, 'error_summary', 'an error is present (summary of the bits below)'),
    (1 << 30, 'cpu_ram_error', 'CPU or RAM error'),
    (1 << 29, 'digital_board_error', 'digital board error'),
    (1 << 28, 'analog_board_error', 'analog board error'),
    (1 << 27, 'serial_link_error', 'serial link communication error'),
    (1 << 26, 'program_memory_error', 'program memory verification error'),
    (1 << 25, 'config_halt', 'halted because of configuration errors'),
    (1 << 24, 'settings_invalid', 'settings validation error'),
    (1 << 23, 'config_calibration_mismatch', 'configuration incompatible with the calibration'),
    (1 << 22, 'network_failure', 'network communication failure'),
    (1 << 21, 'can_error', 'CAN communication error'),
    (1 << 20, 'rdt_error', 'RDT communication error'),
    (1 << 19, 'ethernet_ip_error', 'EtherNet/IP protocol failure'),
    (1 << 18, 'devicenet_error', 'DeviceNet protocol failure'),
    (1 << 17, 'saturation', 'transducer saturation or A/D error'),
    (1 << 16, 'monitor_condition', 'monitor condition (threshold) latched'),
    (1 << 14, 'watchdog_timeout', 'watchdog timeout'),
    (1 << 13, 'stack_check_error', 'stack check error'),
    (1 << 12, 'eeprom_error', 'serial EEPROM (I2C) failure'),
    (1 << 11, 'flash_error', 'serial flash (SPI) failure'),
    (1 << 10, 'analog_watchdog_timeout', 'analog board watchdog timeout'),
    (1 << 9, 'excitation_current_high', 'strain gage excitation current too high'),
    (1 << 8, 'excitation_current_low', 'strain gage excitation current too low'),
    (1 << 7, 'analog_ground_error', 'artificial analog ground out of range'),
    (1 << 6, 'analog_supply_high', 'analog board power supply too high'),
    (1 << 5, 'analog_supply_low', 'analog board power supply too low'),
    (1 << 4, 'serial_data_unavailable', 'serial link data unavailable'),
    (1 << 3, 'reference_voltage_error', 'reference voltage or power monitoring error'),
    (1 << 2, 'temperature_error', 'internal temperature error'),
    (1 << 1, 'http_error', 'HTTP protocol failure'),
)
STATUS_SATURATION = 1 << 17
STATUS_MONITOR_CONDITION = 1 << 16
STATUS_ERROR_SUMMARY = 1 << 31
_KNOWN_MASK = 0
for _mask, _name, _text in STATUS_BITS:
    _KNOWN_MASK |= _mask


def decode_status(status: int) -> list[str]:
    """Names of the bits set in a status word; ``[]`` when healthy (0).

    Bits with no documented meaning are reported as ``bit<N>``."""
    status &= UINT32_MASK
    names = [name for mask, name, _ in STATUS_BITS if status & mask]
    unknown = status & ~_KNOWN_MASK
    names += [f'bit{i}' for i in range(32) if unknown >> i & 1]
    return names


def status_is_healthy(status: int) -> bool:
    return (status & UINT32_MASK) == 0


# --------------------------------------------------------------------------- sequence tracking

SEQ_NEW = 'new'            # newest so far (in order, or after a gap): use it
SEQ_LATE = 'late'          # arrived after a newer one, was counted lost: not used
SEQ_DUPLICATE = 'duplicate'  # already received: not used
SEQ_REJECTED = 'rejected'  # implausible jump, held as a resync candidate: not used
SEQ_RESYNC = 'resync'      # confirmed a jump (sensor restart / long outage): use it


class SequenceTracker:
    """Counts lost, out-of-order and duplicate records from ``rdt_sequence`` (uint32, wraps).

    Exact within ``window`` records: a record that arrives late after a gap was first
    counted lost, then moves from "lost" to "out of order". Definitions:

    * ``received``: records seen (every call to :meth:`observe`);
    * ``lost``: sequence numbers skipped and not (yet) received;
    * ``out_of_order``: records that arrived after a newer one and filled a gap;
    * ``duplicates``: records whose sequence number was already received;
    * ``rejected``: implausible records: far outside the window, or (given arrival times) a
      forward jump the stream could not have made in the time elapsed since it started at
      ``rate_hz`` (x ``RATE_MARGIN``, + ``SLACK`` records), nor since the newest record. A jump is only believed when
      ``CONFIRM - 1`` further records continue it in sequence (``resyncs`` counts those; the
      confirming record is the first one used), so garbage, even two consecutive garbage
      records, cannot wreck the counts, and ``lost`` never exceeds what the elapsed time allows.
    """

    CONFIRM = 3          # records in sequence (the candidate and two more) that confirm a jump
    RATE_MARGIN = 1.5    # the stream may run this much faster than rate_hz
    SLACK = 64           # records of slack on the elapsed-time bound

    def __init__(self, window: int = 4096, max_forward_gap: int = 1 << 20, rate_hz: float | None = None):
        if window < 1 or max_forward_gap < window:
            raise ConfigError('need 1 <= window <= max_forward_gap')
        self.window = window
        self.max_forward_gap = max_forward_gap
        self.rate_hz = rate_hz        # bound on the stream rate for the plausibility check (None: no bound)
        self.reset()

    def reset(self) -> None:
        """Forget the stream (call when (re)starting streaming). Counters are kept."""
        self.last: int | None = None
        self._missing: set[int] = set()
        self._candidate: int | None = None
        self._candidate_run = 0
        self._origin_ns: int | None = None   # arrival time of the first record of this stream
        self._last_ns: int | None = None     # arrival time of the newest record used
        self._span = 0                        # sequence numbers advanced since then
        if not hasattr(self, 'received'):
            self.clear_counters()

    def clear_counters(self) -> None:
        self.received = 0
        self.lost = 0
        self.out_of_order = 0
        self.duplicates = 0
        self.rejected = 0
        self.resyncs = 0

    def counters(self) -> dict[str, int]:
        return {'received': self.received, 'lost': self.lost, 'out_of_order': self.out_of_order,
                'duplicates': self.duplicates, 'rejected': self.rejected, 'resyncs': self.resyncs}

    def _plausible(self, ahead: int, now_ns: int | None) -> bool:
        if ahead > self.max_forward_gap:
            return False
        if now_ns is None or self.rate_hz is None or self._origin_ns is None:
            return True
        per_s = self.rate_hz * self.RATE_MARGIN
        since_last_s = max(0, now_ns - self._last_ns) * 1e-9
        since_origin_s = max(0, now_ns - self._origin_ns) * 1e-9
        return ahead <= since_last_s * per_s + self.SLACK and self._span + ahead <= since_origin_s * per_s + self.SLACK

    def observe(self, seq: int, now_ns: int | None = None) -> str:
        """Classify one record; ``now_ns`` (its arrival time) enables the elapsed-time bound."""
        seq &= UINT32_MASK
        self.received += 1
        last = self.last
        if last is None:
            self._start(seq, now_ns)
            return SEQ_NEW
        ahead = (seq - last) & UINT32_MASK
        if ahead == 1:                      # the next record: nothing lost, nothing to judge
            self.last = seq
            self._span += 1
            self._candidate, self._candidate_run = None, 0
            if now_ns is not None:
                self._last_ns = now_ns
            return SEQ_NEW
        if ahead == 0:
            self.duplicates += 1
            return SEQ_DUPLICATE
        if ahead <= (UINT32_MASK >> 1) and self._plausible(ahead, now_ns):
            self._advance(seq, ahead)
            self._span += ahead
            if now_ns is not None:
                self._last_ns = now_ns
            return SEQ_NEW
        behind = (last - seq) & UINT32_MASK
        if behind <= self.window:
            if seq in self._missing:
                self._missing.discard(seq)
                self.lost -= 1
                self.out_of_order += 1
                return SEQ_LATE
            self.duplicates += 1
            return SEQ_DUPLICATE
        # Implausible: believe it only if the next records continue it.
        cand = self._candidate
        if cand is not None and ((seq - cand) & UINT32_MASK) == 1:
            self._candidate = seq
            self._candidate_run += 1
            if self._candidate_run >= self.CONFIRM:
                # The jump was genuine (sensor restart, or an outage longer than the bound):
                # restart the accounting from it, count no loss.
                self.rejected -= self.CONFIRM - 1
                self.resyncs += 1
                self._missing.clear()
                self._start(seq, now_ns)
                return SEQ_RESYNC
            self.rejected += 1
            return SEQ_REJECTED
        self._candidate = seq
        self._candidate_run = 1
        self.rejected += 1
        return SEQ_REJECTED

    def _start(self, seq: int, now_ns: int | None) -> None:
        self.last = seq
        self._candidate, self._candidate_run = None, 0
        self._origin_ns, self._last_ns, self._span = now_ns, now_ns, 0

    def _advance(self, seq: int, ahead: int) -> None:
        gap = ahead - 1
        if gap:
            self.lost += gap
            start = self.last + 1 + max(0, gap - self.window)
            for s in range(start, self.last + ahead):
                self._missing.add(s & UINT32_MASK)
        self.last = seq
        self._candidate, self._candidate_run = None, 0
        if len(self._missing) > self.window:
            # Forget gaps older than the window: a record that late counts as a duplicate.
            self._missing = {s for s in self._missing if ((seq - s) & UINT32_MASK) <= self.window}


# --------------------------------------------------------------------------- calibration

#: Newtons per unit of the force units a Net F/T reports in ``scfgfu``.
FORCE_UNITS = {'n': 1.0, 'kn': 1000.0, 'lbf': 4.4482216152605, 'klbf': 4448.2216152605,
               'g': 0.00980665, 'kg': 9.80665, 'gf': 0.00980665, 'kgf': 9.80665}
#: Newton-metres per unit of the torque units of ``scfgtu``.
TORQUE_UNITS = {'nm': 1.0, 'n-m': 1.0, 'nmm': 1e-3, 'n-mm': 1e-3, 'knm': 1000.0, 'kn-m': 1000.0,
                'lbf-in': 0.1129848290276167, 'lbfin': 0.1129848290276167,
                'lbf-ft': 1.3558179483314004, 'lbfft': 1.3558179483314004,
                'g-cm': 9.80665e-5, 'gcm': 9.80665e-5, 'kg-cm': 0.0980665, 'kgcm': 0.0980665,
                'kgf-cm': 0.0980665, 'gf-cm': 9.80665e-5}


class CalibrationError(SensorFault):
    """Counts-per-unit or units are missing or invalid."""


def unit_scale(unit: str, table: dict[str, float], what: str) -> float:
    key = unit.strip().lower().replace(' ', '').replace('·', '-')
    if key not in table:
        raise CalibrationError(f'unknown {what} unit {unit!r} (known: {sorted(table)})')
    return table[key]


@dataclass(frozen=True)
class Calibration:
    """Counts per force unit and per torque unit, and those units."""

    counts_per_force: float
    counts_per_torque: float
    force_unit: str = 'N'
    torque_unit: str = 'Nm'
    source: str = 'parameters'

    def __post_init__(self):
        for name in ('counts_per_force', 'counts_per_torque'):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise CalibrationError(f'{name} must be a finite number > 0, got {v!r}')
        unit_scale(self.force_unit, FORCE_UNITS, 'force')
        unit_scale(self.torque_unit, TORQUE_UNITS, 'torque')

    @property
    def newton_per_count(self) -> float:
        return unit_scale(self.force_unit, FORCE_UNITS, 'force') / self.counts_per_force

    @property
    def newton_metre_per_count(self) -> float:
        return unit_scale(self.torque_unit, TORQUE_UNITS, 'torque') / self.counts_per_torque

    def scales(self) -> tuple[float, float, float, float, float, float]:
        f, t = self.newton_per_count, self.newton_metre_per_count
        return (f, f, f, t, t, t)

    def to_si(self, counts: Sequence[int]) -> list[float]:
        return [c * s for c, s in zip(counts, self.scales())]

    def to_counts(self, wrench_si: Sequence[float]) -> list[float]:
        """SI wrench to (unrounded) counts; the simulator rounds and saturates."""
        return [w / s for w, s in zip(wrench_si, self.scales())]

    def to_xml(self, extra: dict[str, str] | None = None) -> str:
        """A minimal ``netftapi2.xml`` page (what the simulator serves)."""
        fields = {'cfgcpf': f'{self.counts_per_force:g}', 'cfgcpt': f'{self.counts_per_torque:g}',
                  'scfgfu': self.force_unit, 'scfgtu': self.torque_unit}
        fields.update(extra or {})
        body = ''.join(f'<{k}>{v}</{k}>' for k, v in fields.items())
        return f'<?xml version="1.0" encoding="utf-8"?>\n<netft>{body}</netft>\n'


def parse_calibration_xml(text: str | bytes, source: str = 'netftapi2.xml') -> Calibration:
    """Read ``cfgcpf``, ``cfgcpt``, ``scfgfu``, ``scfgtu`` from a netftapi2.xml page."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise CalibrationError(f'{source}: not valid XML ({exc})') from exc
    found: dict[str, str] = {}
    for elem in root.iter():
        tag = elem.tag.rsplit('}', 1)[-1].lower()
        if tag in ('cfgcpf', 'cfgcpt', 'scfgfu', 'scfgtu') and elem.text is not None and tag not in found:
            found[tag] = elem.text.strip()
    missing = [k for k in ('cfgcpf', 'cfgcpt', 'scfgfu', 'scfgtu') if k not in found]
    if missing:
        raise CalibrationError(f'{source}: missing field(s) {missing}')
    try:
        cpf, cpt = float(found['cfgcpf']), float(found['cfgcpt'])
    except ValueError as exc:
        raise CalibrationError(f'{source}: cfgcpf/cfgcpt are not numbers ({exc})') from exc
    try:
        return Calibration(cpf, cpt, found['scfgfu'], found['scfgtu'], source=source)
    except CalibrationError as exc:
        raise CalibrationError(f'{source}: {exc}') from exc


def calibration_url(host: str, port: int = 80) -> str:
    return f'http://{host}/netftapi2.xml' if port == 80 else f'http://{host}:{port}/netftapi2.xml'


def fetch_calibration(host: str, port: int = 80, timeout_s: float = 2.0) -> Calibration:
    """GET the sensor's calibration page and parse it (used once at start-up)."""
    url = calibration_url(host, port)
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - http to the sensor
            data = response.read(1 << 20)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CalibrationError(f'cannot read {url}: {exc}') from exc
    return parse_calibration_xml(data, source=url)
