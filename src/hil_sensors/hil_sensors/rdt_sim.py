"""A simulated ATI Net F/T that speaks RDT over UDP (plain Python, no rclpy).

:class:`RdtSimulator` binds a UDP socket (127.0.0.1 by default), answers the real
request packets (start real-time, start buffered, stop, set hardware bias) and streams
records at a chosen rate back to whoever sent the start command, from the socket the
request went to, as the sensor does. It can also serve the calibration page
``/netftapi2.xml`` over HTTP. The driver cannot tell it from hardware.

The wrench comes from a **source**: any callable ``source(t) -> 6 numbers`` (N, Nm, sensor
frame), where ``t`` is the sensor's own sample time ``k / rate_hz`` of record ``k``, so a
profile is reproduced record for record whatever the timing jitter. Sources here: a
constant (settable), a sine, a function; the ROS simulator node adds a topic source, and
the MuJoCo lab twin can plug in the same way. Options add Gaussian noise, a constant
bias, saturation (clipped counts plus status bit 17) and, for tests, exact fault
injection: dropped, delayed (re-ordered), duplicated records by sequence number, a chosen
first sequence number (wrap-around), status words, and raw datagrams.

Run alone: ``python -m hil_sensors.rdt_sim --rate 1000 --port 49152``.
"""

from __future__ import annotations

import argparse
import math
import random
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable, Sequence

from hil_sensors import rdt
from hil_common.errors import ConfigError, InputError, StartError

WrenchSource = Callable[[float], Sequence[float]]


class ConstantSource:
    """A wrench that stays until changed (thread-safe: one tuple assignment)."""

    def __init__(self, wrench: Sequence[float] = (0.0,) * 6):
        self.set(wrench)

    def set(self, wrench: Sequence[float]) -> None:
        w = tuple(float(v) for v in wrench)
        if len(w) != 6:
            raise InputError('a wrench has 6 components')
        self.wrench = w

    def __call__(self, t: float) -> Sequence[float]:
        return self.wrench


class SineSource:
    """``offset + amplitude * sin(2 pi f t)`` per axis."""

    def __init__(self, amplitude: Sequence[float], frequency_hz: float, offset: Sequence[float] = (0.0,) * 6):
        self.amplitude = tuple(float(v) for v in amplitude)
        self.offset = tuple(float(v) for v in offset)
        self.frequency_hz = float(frequency_hz)

    def __call__(self, t: float) -> Sequence[float]:
        s = math.sin(2.0 * math.pi * self.frequency_hz * t)
        return tuple(o + a * s for o, a in zip(self.offset, self.amplitude))


@dataclass
class SimStats:
    requests: dict = field(default_factory=dict)
    malformed_requests: int = 0
    records_sent: int = 0
    packets_sent: int = 0
    records_dropped: int = 0
    injected: int = 0
    saturated_records: int = 0
    source_errors: int = 0
    overruns: int = 0


class RdtSimulator:
    """Simulated Net F/T sensor on a UDP socket; use as a context manager or start()/stop()."""

    def __init__(self, source: WrenchSource | None = None, *,
                 calibration: rdt.Calibration | None = None,
                 host: str = '127.0.0.1', port: int = 0, rate_hz: float = 1000.0,
                 records_per_packet: int = 10, http_port: int | None = None,
                 noise_std: float | Sequence[float] = 0.0, bias: Sequence[float] = (0.0,) * 6,
                 saturation: Sequence[float] | None = None, seed: int = 0,
                 start_sequence: int = 1, drop: Iterable[int] = (), delay: dict | None = None,
                 duplicate: Iterable[int] = (), status_fn: Callable[[int], int] | None = None,
                 spin_us: float = 150.0, paced: bool = True):
        # paced: the server's thread sends records at rate_hz on the wall clock. paced=False: the
        # owner sends them with emit() (the lab twin on its simulated clock, one record per sample);
        # the thread then only answers the start/stop/bias commands.
        self.paced = paced
        self.source: WrenchSource = source if source is not None else ConstantSource()
        self.calibration = calibration or rdt.Calibration(1e6, 1e6)
        self.host, self.port = host, port
        if not rate_hz > 0:
            raise ConfigError('rate_hz must be > 0')
        self.rate_hz = float(rate_hz)
        if not 1 <= records_per_packet <= rdt.MAX_RECORDS_PER_PACKET:
            raise ConfigError(f'records_per_packet must be in 1..{rdt.MAX_RECORDS_PER_PACKET}')
        self.records_per_packet = records_per_packet
        self.http_port = http_port
        self.noise_std = tuple(noise_std) if isinstance(noise_std, (list, tuple)) else (float(noise_std),) * 6
        self.bias = tuple(float(v) for v in bias)
        self.saturation = tuple(float(v) for v in saturation) if saturation is not None else None
        self.rng = random.Random(seed)
        self.start_sequence = start_sequence & rdt.UINT32_MASK
        self.drop = set(v & rdt.UINT32_MASK for v in drop)
        self.delay = {k & rdt.UINT32_MASK: int(v) for k, v in (delay or {}).items()}
        self.duplicate = set(v & rdt.UINT32_MASK for v in duplicate)
        self.status_fn = status_fn
        self.spin_s = spin_us * 1e-6
        self.stats = SimStats()
        self.client: tuple[str, int] | None = None
        self.streaming = False
        self.paused = False
        self.mode = 'realtime'
        self.hardware_bias_counts = [0] * 6
        self.last_counts = [0] * 6
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._http: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self._running = False
        self._held: list[list] = []   # [packets_to_wait, datagram]
        self._k = 0                   # records generated since start
        self._ft_sequence: int | None = None   # emit(): the owner's sample count of the record being made
        self._seq = self.start_sequence
        self._remaining = 0           # records left (sample_count), 0 = unlimited
        self._next_deadline = 0.0

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> 'RdtSimulator':
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((self.host, self.port))
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        if self.http_port is not None:
            self._start_http()
        self._running = True
        self._thread = threading.Thread(target=self._run, name='rdt-sim', daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> 'RdtSimulator':
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    # ----------------------------------------------------------------- test controls
    def set_source(self, source: WrenchSource) -> None:
        self.source = source

    def pause(self) -> None:
        """Stop sending without being told (a pulled cable): the driver must see a stale stream."""
        self.paused = True

    def resume(self) -> None:
        with self._lock:
            self.paused = False
            self._next_deadline = time.perf_counter()

    def set_rate(self, rate_hz: float) -> None:
        """Change the output rate while streaming; the next record is due now."""
        with self._lock:
            self.rate_hz = float(rate_hz)
            self._next_deadline = time.perf_counter()

    def inject(self, data: bytes, to: tuple[str, int] | None = None) -> None:
        """Send a raw datagram from the sensor socket (malformed-packet and fuzz tests)."""
        target = to or self.client
        if target is None or self._sock is None:
            raise StartError('no client to send to (no start command received yet)')
        self._sock.sendto(data, target)
        self.stats.injected += 1

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.002)
        return predicate()

    # ----------------------------------------------------------------- HTTP calibration page
    def _start_http(self) -> None:
        xml = self.calibration.to_xml({'prodname': 'HIL simulated Net F/T',
                                       'comrdtrate': f'{self.rate_hz:g}'}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server API
                if self.path.split('?')[0] == '/netftapi2.xml':
                    self.send_response(200)
                    self.send_header('Content-Type', 'text/xml')
                    self.send_header('Content-Length', str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                else:
                    self.send_error(404)

            def log_message(self, *args):
                pass

        self._http = ThreadingHTTPServer((self.host, self.http_port), Handler)
        self.http_port = self._http.server_address[1]
        self._http_thread = threading.Thread(target=self._http.serve_forever, name='rdt-sim-http', daemon=True)
        self._http_thread.start()

    # ----------------------------------------------------------------- main loop
    def _run(self) -> None:
        sock = self._sock
        while self._running:
            if self.streaming and not self.paused and self.paced:
                wait = self._next_deadline - time.perf_counter()
            else:
                wait = 0.05
            if wait > self.spin_s:
                r, _, _ = select.select([sock], [], [], wait - self.spin_s * 0.5)
                if r:
                    self._read_requests()
                continue
            self._read_requests()
            if not (self.streaming and not self.paused and self.paced):
                continue
            while time.perf_counter() < self._next_deadline:
                pass
            with self._lock:
                self._emit_due()

    def _read_requests(self) -> None:
        while True:
            try:
                data, addr = self._sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue
            try:
                req = rdt.decode_request(data)
            except rdt.RdtFormatError:
                self.stats.malformed_requests += 1
                continue
            name = req.command_name
            self.stats.requests[name] = self.stats.requests.get(name, 0) + 1
            with self._lock:
                self._handle_request(req, addr)

    def _handle_request(self, req: rdt.RdtRequest, addr) -> None:
        if req.command == rdt.CMD_STOP:
            self.streaming = False
            self._flush_held()
        elif req.command in (rdt.CMD_START_REALTIME, rdt.CMD_START_BUFFERED):
            self.client = addr
            self.mode = 'buffered' if req.command == rdt.CMD_START_BUFFERED else 'realtime'
            self._seq = self.start_sequence
            self._k = 0
            self._remaining = req.sample_count
            self._held = []
            self.streaming = True
            self._next_deadline = time.perf_counter()
        elif req.command == rdt.CMD_SET_HARDWARE_BIAS:
            self.hardware_bias_counts = list(self.last_counts)

    def emit(self, wrenches, ft_sequences=None) -> int:
        """Send one record per wrench of ``wrenches`` now, one per datagram (``paced=False``: the
        owner's clock made these samples due; each record carries its wrench instead of the
        source's); nothing while not streaming or paused. Returns how many were sent.

        ``ft_sequences`` (one per wrench): the records' ``ft_sequence``, the owner's sample count on
        its clock (:func:`hil_sensors.rdt.ft_sequence_at`), instead of the records since the start."""
        sent = 0
        with self._lock:
            source = self.source
            try:
                for i, wrench in enumerate(wrenches):
                    if not self.streaming or self.paused:
                        break
                    self.source = lambda t, w=wrench: w
                    self._ft_sequence = None if ft_sequences is None else ft_sequences[i]
                    self._send_packet(1)
                    sent += 1
            finally:
                self.source = source
                self._ft_sequence = None
        return sent

    def _emit_due(self) -> None:
        per_packet = self.records_per_packet if self.mode == 'buffered' else 1
        period = per_packet / self.rate_hz
        now = time.perf_counter()
        behind = int((now - self._next_deadline) / period) + 1
        if behind > 200:   # the process was descheduled: a real sensor does not catch up either
            self.stats.overruns += 1
            self._next_deadline = now
            behind = 1
        for _ in range(behind):
            self._send_packet(per_packet)
            self._next_deadline += period
            if not self.streaming:
                break

    def _make_record(self) -> rdt.RdtRecord:
        t = self._k / self.rate_hz
        try:
            w = [float(v) for v in self.source(t)]
            if len(w) != 6:
                raise InputError('source must return 6 values')
        except Exception:  # noqa: BLE001 - a broken source must not kill the sensor thread
            self.stats.source_errors += 1
            w = [math.nan] * 6
        status = 0
        clipped_any = False
        counts = []
        scales = self.calibration.scales()
        for i in range(6):
            v = w[i] + self.bias[i]
            if self.noise_std[i]:
                v += self.rng.gauss(0.0, self.noise_std[i])
            if self.saturation is not None and abs(v) > self.saturation[i]:
                v = math.copysign(self.saturation[i], v)
                clipped_any = True
            c, clipped = rdt.saturate_int32(v / scales[i] if math.isfinite(v) else v)
            clipped_any |= clipped
            counts.append(c)
        self.last_counts = counts
        counts = [c - h for c, h in zip(counts, self.hardware_bias_counts)]
        counts = [rdt.saturate_int32(c)[0] for c in counts]
        if clipped_any:
            status |= rdt.STATUS_ERROR_SUMMARY | rdt.STATUS_SATURATION
            self.stats.saturated_records += 1
        seq = self._seq
        if self.status_fn is not None:
            status |= self.status_fn(seq) & rdt.UINT32_MASK
        ft_sequence = self._k + 1 if self._ft_sequence is None else self._ft_sequence
        rec = rdt.RdtRecord(seq, ft_sequence & rdt.UINT32_MASK, status, tuple(counts))
        self._k += 1
        self._seq = (self._seq + 1) & rdt.UINT32_MASK
        return rec

    def _send_packet(self, per_packet: int) -> None:
        records = []
        for _ in range(per_packet):
            records.append(self._make_record())
            if self._remaining:
                self._remaining -= 1
                if self._remaining == 0:
                    self.streaming = False
                    break
        first = records[0].rdt_sequence
        data = rdt.encode_packet(records)
        self.stats.records_sent += len(records)
        # release held (delayed) packets whose wait is over, after this one
        due = []
        for item in self._held:
            item[0] -= 1
            if item[0] <= 0:
                due.append(item)
        if first in self.drop:
            self.stats.records_dropped += len(records)
        elif first in self.delay:
            self._held.append([self.delay[first], data])
        else:
            self._sendto(data)
            if first in self.duplicate:
                self._sendto(data)
        for item in due:
            self._held.remove(item)
            self._sendto(item[1])
        if not self.streaming:
            self._flush_held()

    def _flush_held(self) -> None:
        for _, data in self._held:
            self._sendto(data)
        self._held = []

    def _sendto(self, data: bytes) -> None:
        try:
            self._sock.sendto(data, self.client)
            self.stats.packets_sent += 1
        except OSError:
            pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description='Simulated ATI Net F/T (RDT over UDP) on the loopback interface')
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=rdt.RDT_PORT)
    ap.add_argument('--rate', type=float, default=1000.0, help='records per second')
    ap.add_argument('--http-port', type=int, default=None, help='serve /netftapi2.xml on this port')
    ap.add_argument('--wrench', type=float, nargs=6, default=[0.0] * 6, metavar=('FX', 'FY', 'FZ', 'TX', 'TY', 'TZ'))
    ap.add_argument('--noise', type=float, default=0.0, help='noise standard deviation (N, Nm)')
    ap.add_argument('--duration', type=float, default=0.0, help='seconds to run (0: until Ctrl-C)')
    args = ap.parse_args(argv)
    with RdtSimulator(ConstantSource(args.wrench), host=args.host, port=args.port, rate_hz=args.rate,
                      http_port=args.http_port, noise_std=args.noise) as sim:
        print(f'simulated Net F/T on {sim.host}:{sim.port} at {args.rate:g} Hz'
              + (f', calibration page on port {sim.http_port}' if sim.http_port else ''), flush=True)
        try:
            end = time.monotonic() + args.duration if args.duration > 0 else math.inf
            while time.monotonic() < end:
                time.sleep(0.1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
