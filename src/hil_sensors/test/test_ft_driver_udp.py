"""FtDriver against the simulated sensor over real UDP sockets on 127.0.0.1 (no ROS).

Checks scaling, bias, exact loss/re-order/duplicate/wrap-around accounting, buffered
packets, malformed datagrams, overload / stale / saturation latches, hardware bias and
the drain-newest behaviour (no queue).
"""

import socket
import time

import numpy as np
import pytest

from hil_sensors import rdt
from hil_common.params import ParameterError
from hil_sensors.ft_driver import FtDriver, check_parameters
from hil_sensors.rdt_sim import ConstantSource, RdtSimulator

U32 = 2**32


def make_driver(sim, **params):
    # a generous stale timeout unless a test is about staleness: a loaded CI machine can
    # starve the in-process simulator thread for tens of milliseconds
    cfg = check_parameters({'sensor_port': sim.port, 'sensor_rate_hz': sim.rate_hz, 'low_pass.enabled': False,
                            'stale_timeout_ms': 1000.0, **params})
    d = FtDriver(cfg, calibration=None if cfg['calibration.source'] == 'sensor' else sim.calibration)
    d.open()
    return d


def pump(driver, until, timeout_s=5.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        driver.poll(0.005)
        if until():
            return True
    return until()


class Lockstep:
    """The driver on a clock the test steps, and a simulator that sends records only when told
    (``paced=False``): one record per ``period`` of the driver's clock. Staleness, start and
    recovery times are judged on this timeline, so a loaded machine cannot stretch them; the
    wall clock only bounds how long a sent datagram may take to arrive (generously)."""

    def __init__(self, port, rate_hz=1000.0, **params):
        self.now_ns = 1_000_000_000
        self.period_ns = round(1e9 / rate_hz)
        cfg = check_parameters({'sensor_port': port, 'sensor_rate_hz': rate_hz, 'low_pass.enabled': False, **params})
        self.driver = FtDriver(cfg, calibration=rdt.Calibration(1e6, 1e6), clock_ns=lambda: self.now_ns,
                               kernel_timestamps=False)   # arrival = the stepped clock at the read
        self.driver.open()
        self.sim = None
        self.rate_hz = rate_hz
        self.sent = 0          # records sent since the sensor started streaming: record k is at k / rate_hz

    def start(self, sim=None):
        """Send the start command; with ``sim``, wait (wall clock) until it streams."""
        self.driver.start_streaming()
        if sim is not None:
            self.wait_streaming(sim)

    def wait_streaming(self, sim):
        self.sim = sim
        assert sim.wait_for(lambda: sim.streaming, 10.0), 'the simulator never got the start command'
        self.sent = 0

    def step(self, records=True):
        """One period of driver time; with ``records``, the sensor sends one record in it and the
        driver reads it before judging the stream at the new time."""
        self.now_ns += self.period_ns
        d = self.driver
        if not records:
            d.poll(0.0)
            return
        expected = d.counters['datagrams'] + self.sim.emit([self.sim.source(self.sent / self.rate_hz)])
        self.sent += 1
        end = time.monotonic() + 10.0
        while d.counters['datagrams'] < expected and time.monotonic() < end:
            d.poll(0.5)
        assert d.counters['datagrams'] == expected, 'a record sent on the loopback never arrived'

    def run(self, duration_s, records=True, until=None):
        """``duration_s`` of driver time (whole periods); stops early when ``until()`` holds and
        returns the driver time it took (None if it never held)."""
        for k in range(1, round(duration_s * 1e9 / self.period_ns) + 1):
            self.step(records)
            if until is not None and until():
                return k * self.period_ns * 1e-9
        return None


@pytest.fixture
def sim_factory():
    sims, drivers = [], []

    def make(source=None, **kw):
        sim = RdtSimulator(source, **kw).start()
        sims.append(sim)
        return sim

    yield make, drivers
    for d in drivers:
        d.close()
    for s in sims:
        s.stop()


def test_scaled_from_calibration_page_and_tared(sim_factory):
    make, drivers = sim_factory
    cal = rdt.Calibration(1_000_000, 100_000, 'kN', 'N-mm')       # 1 mN and 0.01 mNm per count
    wrench = ConstantSource([10.0, -20.0, 30.0, 1.0, -2.0, 3.0])
    sim = make(wrench, calibration=cal, http_port=0, rate_hz=1000.0, bias=[0.5, 0.25, -1.0, 0.01, 0.02, -0.03])
    d = make_driver(sim, **{'calibration.source': 'sensor', 'calibration.http_port': sim.http_port})
    drivers.append(d)
    assert d.calibration.source.endswith('/netftapi2.xml')
    d.start_streaming()
    assert pump(d, lambda: d.counters['accepted'] >= 20)
    expected_raw = [10.5, -19.75, 29.0, 1.01, -1.98, 2.97]
    np.testing.assert_allclose(d.newest.raw, expected_raw, atol=1e-9)
    assert d.newest.processed == pytest.approx(expected_raw)
    # tare with no load: processed wrench becomes exactly the applied load afterwards
    wrench.set([0.0] * 6)
    time.sleep(0.05)
    pump(d, lambda: False, 0.05)
    target = d.request_tare(50)
    assert pump(d, lambda: d.chain.tare.count >= target)
    np.testing.assert_allclose(d.chain.tare.offset, [0.5, 0.25, -1.0, 0.01, 0.02, -0.03], atol=1e-9)
    wrench.set([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    n = d.counters['accepted']
    assert pump(d, lambda: d.counters['accepted'] > n + 20)
    np.testing.assert_allclose(d.newest.processed, [1.0, 2.0, 3.0, 0.1, 0.2, 0.3], atol=1e-9)
    # the sample stamp is the kernel receive time: just before now
    assert 0 <= time.time_ns() - d.newest.stamp_ns < 1e9
    assert d.kernel_timestamps


def test_loss_reorder_duplicates_and_wraparound_counted_exactly(sim_factory):
    make, drivers = sim_factory
    start = U32 - 20
    drop = {U32 - 15, U32 - 1, 0, 5}                      # includes the last number and 0 around the wrap
    delay = {U32 - 10: 3, 3: 2}                           # each sent after 3 (2) later packets
    duplicate = {U32 - 5, 7}
    sim = make(rate_hz=2000.0, start_sequence=start, drop=drop, delay=delay, duplicate=duplicate)
    d = make_driver(sim)
    drivers.append(d)
    d.start_streaming()
    # sequence numbers from 2**32-20 to 29 are 50 records; wait until the stream is past them
    assert pump(d, lambda: d.tracker.last is not None and 30 <= d.tracker.last < 1000)
    c = d.tracker.counters()
    assert c['lost'] == 4
    assert c['out_of_order'] == 2
    assert c['duplicates'] == 2
    assert c['rejected'] == 0 and c['resyncs'] == 0
    assert c['received'] == d.counters['records']
    assert d.counters['accepted'] == c['received'] - 2 - 2   # late and duplicate records are not used


def test_buffered_mode_several_records_per_datagram(sim_factory):
    make, drivers = sim_factory
    ramp = lambda t: [t, 0, 0, 0, 0, 0]   # noqa: E731 - Fx = sample time
    sim = make(ramp, rate_hz=2000.0, records_per_packet=8)
    d = make_driver(sim, rdt_mode='buffered', **{'overload.enabled': False})
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.counters['records'] >= 400)
    assert sim.stats.requests.get('start_buffered') == 1
    assert d.counters['records'] == 8 * d.counters['datagrams']
    assert d.tracker.lost == 0
    # newest record of a packet carries the packet's arrival time; its Fx = its sample time
    s = d.newest
    assert s.stamp_ns == s.arrival_ns
    assert s.raw[0] == pytest.approx((s.rdt_sequence - 1) / 2000.0, abs=1e-6)


def test_malformed_and_foreign_datagrams_are_counted_and_survived(sim_factory):
    make, drivers = sim_factory
    sim = make(ConstantSource([1, 2, 3, 0, 0, 0]), rate_hz=500.0)
    d = make_driver(sim)
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.counters['accepted'] > 5)
    bad = [b'', b'\x00', rdt.encode_request(rdt.CMD_START_REALTIME), b'\x12\x34' * 17, b'\xff' * 37,
           b'\x00' * 71, b'\x00' * (36 * (rdt.MAX_RECORDS_PER_PACKET + 1))]
    for data in bad:
        sim.inject(data)
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(('127.0.0.1', 0))
    for _ in range(3):
        stranger.sendto(rdt.encode_record(rdt.RdtRecord(99, 1, 0, (10**9,) * 6)), d.local_address)
    stranger.close()
    assert pump(d, lambda: d.counters['malformed'] + d.counters['foreign'] >= len(bad) + 3)
    time.sleep(0.05)
    d.poll(0.01)
    assert d.counters['malformed'] == len(bad)
    assert d.counters['foreign'] == 3
    assert not d.fault.active        # the foreign "overload" record was not believed
    n = d.counters['accepted']
    assert pump(d, lambda: d.counters['accepted'] > n + 10)
    assert d.newest.raw == pytest.approx([1, 2, 3, 0, 0, 0])


def test_single_sample_overload_latches_until_reset(sim_factory):
    make, drivers = sim_factory
    spike_at = 0.05   # s of sensor time: one record only

    def profile(t):
        return [0, 0, 2000.0 if abs(t - spike_at) < 1e-9 else 5.0, 0, 0, 0]

    sim = make(profile, rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, stale_timeout_ms=50.0)
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    assert ls.run(0.1, until=lambda: d.fault.active) == pytest.approx(0.051)   # record 51 is at 0.05 s
    assert d.fault.reason == 'overload' and 'fz' in d.fault.detail
    assert d.counters['overloads'] == 1
    events = d.take_fault_events()
    assert events and events[0][:2] == (True, 'overload')
    ls.run(0.001)                                                   # a sample after the spike ...
    s = d.take_sample()
    assert s.raw[2] == 5.0 and d.processed_output(s) is None        # ... withheld
    ls.run(0.02)
    assert d.fault.active and d.counters['overloads'] == 1          # latched: it does not clear on its own
    ok, msg = d.reset_fault()
    assert ok, msg
    assert d.take_fault_events()[0][:2] == (False, 'reset')
    ls.run(0.001)
    s = d.take_sample()
    assert d.processed_output(s) == pytest.approx([0, 0, 5.0, 0, 0, 0])


def test_sustained_overload_refuses_reset(sim_factory):
    make, drivers = sim_factory
    sim = make(ConstantSource([600.0, 0, 0, 0, 0, 0]), rate_hz=500.0, paced=False)
    ls = Lockstep(sim.port, rate_hz=500.0, **{'low_pass.cutoff_hz': 50.0})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    assert ls.run(0.1, until=lambda: d.fault.active) == pytest.approx(0.002)   # the first record
    ls.run(0.01)
    ok, msg = d.reset_fault()
    assert not ok and 'fx' in msg


def test_stale_stream_latches_and_reset_waits_for_data(sim_factory):
    make, drivers = sim_factory
    sim = make(rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, stale_timeout_ms=50.0, **{'stale_recovery.auto': False})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    ls.run(0.03)
    assert d.counters['accepted'] == 30 and not d.fault.active
    # the sensor goes silent: latched once the newest sample is older than 50 ms, not before
    silent = ls.run(1.0, records=False, until=lambda: d.fault.active)
    assert d.fault.reason == 'stale'
    assert silent in (pytest.approx(0.050), pytest.approx(0.051)), silent   # (one step: seconds in floats)
    ok, msg = d.reset_fault()
    assert not ok and 'stale' in msg
    ls.run(0.01)                                 # samples again
    assert d.fault.active                        # manual policy: stays latched until reset
    ok, msg = d.reset_fault()
    assert ok, msg
    assert d.counters['stale_events'] == 1


def test_stale_fault_clears_on_its_own_after_healthy_samples(sim_factory):
    """Issue 15 item 6: under load the driver degrades (counts, reports) and recovers by policy."""
    make, drivers = sim_factory
    sim = make(rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, stale_timeout_ms=200.0, **{'stale_recovery.healthy_s': 0.2})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    ls.run(0.03)
    assert ls.run(1.0, records=False, until=lambda: d.fault.active) and d.fault.reason == 'stale'
    d.take_fault_events()
    healthy = ls.run(1.0, until=lambda: not d.fault.active)
    # stale_recovery.healthy_s of healthy samples, counted from the first one
    assert healthy in (pytest.approx(0.201), pytest.approx(0.202)), healthy   # from the first sample, at 0.001
    assert (d.counters['stale_events'], d.counters['stale_recoveries']) == (1, 1)
    events = d.take_fault_events()
    assert events[-1][:2] == (False, 'reset') and 'on its own' in events[-1][2]
    ls.run(0.001)
    assert d.processed_output(d.take_sample()) is not None


def test_waiting_for_the_first_sample_is_no_fault_and_a_start_timeout_is_reported(sim_factory):
    """Issue 15 item 6: a stale latch before the first sample is not a fault."""
    make, drivers = sim_factory
    sim = make(paced=False)
    ls = Lockstep(sim.port, stale_timeout_ms=50.0, start_timeout_s=0.2)
    d = ls.driver
    drivers.append(d)
    ls.start(sim)                                # streaming, but the sensor sends nothing yet
    ls.run(0.1, records=False)
    assert not d.fault.active and d.snapshot()['stream_state'] == 'waiting'
    reported = ls.run(1.0, records=False, until=lambda: d.counters['start_timeouts'] == 1)
    assert reported in (pytest.approx(0.100), pytest.approx(0.101)), reported   # at the 0.2 s start timeout
    assert not d.fault.active and d.snapshot()['stream_state'] == 'no_data'
    assert any('no sample' in n for n in d.notices)
    ls.run(0.02)
    assert d.counters['accepted'] == 20 and not d.fault.active
    assert d.counters['stale_events'] == 0      # the wait before the first sample was no stale event


def test_sensor_coming_up_after_the_driver_is_picked_up(sim_factory):
    """Nobody listens when the driver starts: waiting is no fault however long it lasts (12 stale
    timeouts of driver time here), the start command is re-sent every 0.5 s, and a sensor that
    comes up late is picked up by the next one."""
    make, drivers = sim_factory
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    ls = Lockstep(port, stale_timeout_ms=50.0)
    d = ls.driver
    drivers.append(d)
    ls.start()                                       # nobody listens: the request is lost
    ls.run(0.6, records=False)
    assert not d.fault.active and d.snapshot()['stream_state'] == 'waiting'   # waiting is no fault
    assert d.counters['start_requests'] == 2         # re-sent at 0.5 s
    sim = make(ConstantSource([0, 0, 9.0, 0, 0, 0]), port=port, rate_hz=1000.0, paced=False)
    assert ls.run(0.5, records=False, until=lambda: d.counters['start_requests'] == 3) == pytest.approx(0.4)
    ls.wait_streaming(sim)                           # the re-sent start command reached the sensor
    ls.run(0.02)
    assert d.counters['accepted'] == 20
    assert not d.fault.active and d.counters['stale_events'] == 0
    assert d.newest.raw == pytest.approx([0, 0, 9.0, 0, 0, 0])


def test_sensor_saturation_and_error_bits(sim_factory):
    make, drivers = sim_factory
    sim = make(ConstantSource([0, 0, 120.0, 0, 0, 0]), rate_hz=1000.0, saturation=[100.0] * 6)
    d = make_driver(sim)
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.fault.active)
    assert d.fault.reason == 'saturation'
    assert d.counters['accepted'] == 0                    # flagged records are not used
    assert 'saturation' in d.snapshot()['last_status_bits']

    # other error bits: counted and reported, the records dropped; a stream of nothing but
    # errors ends up stale
    sim2 = make(ConstantSource([1, 0, 0, 0, 0, 0]), rate_hz=1000.0,
                status_fn=lambda seq: (1 << 31 | 1 << 29) if seq % 10 == 0 else 0)
    d2 = make_driver(sim2)
    drivers.append(d2)
    d2.start_streaming()
    assert pump(d2, lambda: d2.counters['records'] >= 100)
    assert d2.counters['status_error_records'] == d2.counters['records'] // 10 or \
        abs(d2.counters['status_error_records'] - d2.counters['records'] / 10) <= 1
    assert d2.counters['accepted'] == d2.counters['records'] - d2.counters['status_error_records']
    assert 'digital_board_error' in d2.snapshot()['status_bits_seen']
    assert not d2.fault.active


def test_hardware_bias_command_zeroes_the_sensor(sim_factory):
    make, drivers = sim_factory
    sim = make(ConstantSource([4.0, 5.0, 6.0, 0.4, 0.5, 0.6]), rate_hz=1000.0)
    d = make_driver(sim)
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.counters['accepted'] > 10)
    d.hardware_bias()
    assert pump(d, lambda: sim.stats.requests.get('set_hardware_bias') == 1)
    n = d.counters['accepted']
    assert pump(d, lambda: d.counters['accepted'] > n + 20)
    assert d.newest.raw == pytest.approx([0.0] * 6, abs=1e-9)


def test_drain_uses_newest_sample_never_a_queue(sim_factory):
    """A consumer that stalls does not see stale samples afterwards: one poll drains the
    backlog and offers only the newest record (the 500 Hz-reader-of-7 kHz failure).

    The stall is exact, not a wall-clock sleep: the sensor sends 150 records (what 4 kHz gives
    in a 37.5 ms stall, within what the kernel buffer holds) while the consumer reads nothing."""
    make, drivers = sim_factory
    sim = make(rate_hz=4000.0, paced=False)
    ls = Lockstep(sim.port, rate_hz=4000.0, **{'overload.enabled': False})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    ls.run(0.01)                                  # 40 records, read as they come
    assert d.take_sample().rdt_sequence == 40
    before = d.counters['datagrams']
    assert sim.emit([[float(k), 0, 0, 0, 0, 0] for k in range(1, 151)]) == 150     # the stall
    handled = d.drain()
    assert handled == 150                         # the whole backlog, read in one call
    assert d.counters['datagrams'] - before == 150
    s = d.take_sample()
    assert s.rdt_sequence == 190 == d.tracker.last   # the newest one ...
    assert s.raw[0] == 150.0                      # ... with the newest wrench
    assert d.take_sample() is None                # and nothing queued behind it
    assert d.drain() == 0
    assert d.tracker.lost == 0 and d.counters['accepted'] == 190


def test_gravity_compensation_with_orientation_input(sim_factory):
    from scipy.spatial.transform import Rotation

    from hil_sensors.processing import ToolGravity

    make, drivers = sim_factory
    q = Rotation.from_euler('xyz', [30, -20, 10], degrees=True).as_quat()
    tool = ToolGravity(3.0, [0.01, -0.02, 0.05])
    tool.set_flange_orientation(q)
    applied = np.array([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    sim = make(ConstantSource(list(np.array(tool.wrench) + applied)), rate_hz=1000.0)
    d = make_driver(sim, **{'gravity_compensation.enabled': True, 'gravity_compensation.tool_mass_kg': 3.0,
                            'gravity_compensation.tool_com_m': [0.01, -0.02, 0.05]})
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.counters['accepted'] > 10)
    s = d.take_sample()
    assert d.processed_output(s) is None          # withheld until an orientation arrives
    assert d.set_flange_orientation(q)
    assert not d.set_flange_orientation([0, 0, 0, 0])
    assert not d.set_flange_orientation([float('nan'), 0, 0, 1])
    assert d.counters['pose_rejected'] == 2
    n = d.counters['accepted']
    assert pump(d, lambda: d.counters['accepted'] > n + 5)
    np.testing.assert_allclose(d.processed_output(d.take_sample()), applied, atol=1e-5)


def test_deadband_zeroes_noise_and_passes_a_load_less_the_band(sim_factory):
    """0.05 N / 0.003 N m noise inside a 0.25 N / 0.015 N m band reads exactly zero; a 5 N load
    reads 5 N less the band: the mean of 100 samples within a tenth of the band (a driver that
    forgets to subtract the band is off by the whole band)."""
    make, drivers = sim_factory
    load = ConstantSource([0.0] * 6)
    sim = make(load, rate_hz=1000.0, noise_std=[0.05, 0.05, 0.05, 0.003, 0.003, 0.003], paced=False)
    ls = Lockstep(sim.port, **{'deadband.enabled': True})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    raw, processed = [], []

    def collect():
        sample = d.take_sample()
        raw.append(list(sample.raw))
        processed.append(list(sample.processed))
    ls.run(0.3, until=collect)
    assert len(raw) == 300
    assert np.std(np.array(raw)[:, 0]) > 0.02            # the noise is there ...
    assert np.count_nonzero(np.array(processed)) == 0    # ... and none of it passes
    load.set([5.0, 0.0, 0.0, 0.0, 0.0, 0.1])
    loaded = []
    ls.run(0.1, until=lambda: loaded.append(d.take_sample().processed))
    assert len(loaded) == 100
    mean = np.mean(loaded, axis=0)
    assert mean[0] == pytest.approx(5.0 - 0.25, abs=0.025)
    assert mean[5] == pytest.approx(0.1 - 0.015, abs=0.0015)
    assert any('dead band: ON' in line for line in d.describe_chain())


def _fitted_amplitude(samples, frequency_hz, rate_hz):
    """Least-squares amplitude of a sine of known frequency in (sequence, value) samples (time = seq / rate)."""
    seq = np.array([s for s, _ in samples], dtype=float)
    y = np.array([v for _, v in samples])
    w = 2.0 * np.pi * frequency_hz * (seq - 1) / rate_hz
    a = np.column_stack([np.sin(w), np.cos(w), np.ones_like(w)])
    coef = np.linalg.lstsq(a, y, rcond=None)[0]
    return float(np.hypot(coef[0], coef[1]))


def test_filter_designed_for_the_measured_rate_when_not_told(sim_factory):
    """Issue 15 item 5: a 1 kHz sensor, the driver not told the rate: the 200 Hz low-pass has
    gain 1/sqrt(2) at 200 Hz (measured on the stream), not at 28.6 Hz as a 7 kHz design would."""
    from hil_sensors.rdt_sim import SineSource

    make, drivers = sim_factory
    amplitude = 10.0
    sim = make(SineSource([amplitude, 0, 0, 0, 0, 0], 200.0), rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, rate_hz=1000.0, sensor_rate_hz=0.0,                 # not told
                  **{'low_pass.enabled': True, 'low_pass.cutoff_hz': 200.0})
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    assert ls.run(1.0, until=lambda: d.chain.filter is not None), d.snapshot()
    assert d.measured_rate_hz == pytest.approx(1000.0, rel=1e-3)
    assert d.chain.filter.sample_rate_hz == pytest.approx(1000.0, rel=1e-3)
    ls.run(0.05)                                                      # settle
    samples = []

    def collect():
        s = d.take_sample()
        samples.append((s.rdt_sequence, s.processed[0]))
    ls.run(0.15, until=collect)
    assert len(samples) == 150
    gain = _fitted_amplitude(samples, 200.0, 1000.0) / amplitude
    assert gain == pytest.approx(1.0 / np.sqrt(2.0), abs=0.05), gain
    assert not d.fault.active


def test_one_skewed_rate_window_is_measured_again_not_latched(sim_factory):
    """A sender that stalls can skew one measurement window (the records of the first window
    arrive 1/600 s apart on the driver's clock); the driver measures again and latches nothing
    when the second window agrees with sensor_rate_hz. A persisting mismatch still latches (the
    test below)."""
    make, drivers = sim_factory
    sim = make(rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, rate_hz=1000.0, rate_measure_s=0.1)
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    ls.period_ns = round(1e9 / 600.0)
    assert ls.run(0.5, until=lambda: any('measuring again' in n for n in d.notices)) is not None, d.notices
    assert not d.fault.active and d.measured_rate_hz is None
    ls.period_ns = round(1e9 / 1000.0)
    assert ls.run(0.5, until=lambda: d.measured_rate_hz is not None) is not None
    assert d.measured_rate_hz == pytest.approx(1000.0, rel=1e-3)
    assert not d.fault.active, d.fault.detail


def test_declared_rate_that_mismatches_the_stream_latches_a_fault_naming_both(sim_factory):
    make, drivers = sim_factory
    sim = make(rate_hz=1000.0)
    d = make_driver(sim, sensor_rate_hz=7000.0)
    drivers.append(d)
    d.start_streaming()
    assert pump(d, lambda: d.fault.active, timeout_s=5.0)
    assert d.fault.reason == 'rate' and 'sensor_rate_hz 7000 Hz' in d.fault.detail and 'measured' in d.fault.detail
    assert d.processed_output(d.newest) is None


@pytest.mark.parametrize('sensor_clock_stamps', [False, True])
def test_sensor_clock_stamps_are_the_sample_times_whatever_the_driver_clock_read(sim_factory, sensor_clock_stamps):
    """The lab twin on its simulated clock sends sample ``k`` (taken at ``k`` ms) with ``ft_sequence = k``
    (:func:`rdt.ft_sequence_at`), over real RDT/UDP. The driver's clock reads each record at a time that
    depends on the machine: one period behind (the record precedes the twin's ``/clock``), standing still,
    or ahead when the driver read records that waited while the clock ran on (a busy driver). With
    ``sensor_clock_stamps`` every stamp is the sample's time exactly; the arrival stamps (the control)
    repeat and run late, which on a loop that steps on stamps is a loop delay that changes from run to run."""
    make, drivers = sim_factory
    sim = make(lambda t: [0.0] * 6, rate_hz=1000.0, paced=False)
    ls = Lockstep(sim.port, sensor_clock_stamps=sensor_clock_stamps)
    d = ls.driver
    drivers.append(d)
    ls.start(sim)
    period = ls.period_ns
    clock_at_read = {k: (k - 1) * period for k in range(1, 11)}          # one period behind
    clock_at_read.update({k: 10 * period for k in range(11, 16)})        # standing still
    clock_at_read.update({k: 24 * period for k in range(16, 21)})        # read late: the clock ran on
    stamps = {}
    for k, now_ns in clock_at_read.items():
        ls.now_ns = now_ns
        expected = d.counters['datagrams'] + sim.emit([[0.0] * 6], [rdt.ft_sequence_at(k * 1e-3, 1000.0)])
        end = time.monotonic() + 10.0
        while d.counters['datagrams'] < expected and time.monotonic() < end:
            d.poll(0.5)
        stamps[k] = d.take_sample().stamp_ns
    errors = np.array([stamps[k] - k * period for k in stamps])
    if sensor_clock_stamps:
        assert np.all(errors == 0), errors
    else:
        assert errors.min() <= -period and errors.max() >= 3 * period, errors


def test_sensor_clock_stamps_count_in_integers():
    """``time_of_ft_sequence`` inverts ``ft_sequence_at`` to within half a period, also at 7 kHz (a period
    that is no whole number of nanoseconds) and a day into a run, where a rounded period drifts."""
    for rate in (1000.0, 7000.0):
        for t_s in (0.0, 1.0, 123.456, 3600.0 * 24):
            k = rdt.ft_sequence_at(t_s, rate)
            assert abs(rdt.time_of_ft_sequence(k, rate) - t_s * 1e9) <= 0.5e9 / rate
    # the last count before the wrap at 7 kHz: 4294967295 / 7000 s = 613566 s + 5295/7000 s (long division),
    # 613566.756428571... s; a period rounded to 142857 ns would put it 0.61 s earlier
    assert rdt.time_of_ft_sequence(2**32 - 1, 7000.0) == 613_566_756_428_571
    assert (2**32 - 1) * round(1e9 / 7000.0) < 613_566_756_428_571 - 600_000_000


def test_sensor_clock_stamps_need_a_declared_rate():
    with pytest.raises(ParameterError, match='sensor_clock_stamps'):
        check_parameters({'sensor_clock_stamps': True, 'sensor_rate_hz': 0.0})
