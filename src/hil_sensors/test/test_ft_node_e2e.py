"""End to end: ft_sensor_node as a process (parameter YAML, as launched in the lab) fed by
the simulated sensor over real UDP on 127.0.0.1, observed over real rclpy/DDS on the
loopback-only profile (the hil_common pytest plugin sets it and a private domain id).
"""

import math
import random
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, WrenchStamped
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_srvs.srv import Trigger

from hil_sensors import rdt
from hil_sensors.processing import LowPassFilter, ToolGravity, WrenchTransform
from hil_sensors.rdt_sim import ConstantSource, RdtSimulator, SineSource
from hil_sensors.testing import DriverProcess, RosTestClient, diagnostic_values, find_executable

CONFIG = Path(__file__).resolve().parents[1] / 'config'
FAULT_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def vec(msg: WrenchStamped) -> list[float]:
    f, t = msg.wrench.force, msg.wrench.torque
    return [f.x, f.y, f.z, t.x, t.y, t.z]


@pytest.fixture(scope='module')
def ros():
    client = RosTestClient('ft_e2e_client')
    yield client
    client.close()


@pytest.fixture
def sims():
    started = []

    def make(source=None, **kw):
        sim = RdtSimulator(source, **kw).start()
        started.append(sim)
        return sim

    yield make
    for s in started:
        s.stop()


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


class SimulatedLab(threading.Thread):
    """The lab's timeline for a driver node under ``use_sim_time``: the test publishes ``/clock``
    in 20 ms ticks and the simulator (``paced=False``) sends each tick's records just before it.
    A tick waits until the node's clock has reached it (its diagnostics, one per tick, are stamped
    with it): a loaded machine slows the timeline down instead of making the stream look stale
    (the records of a tick are in the node's socket before its clock can pass them). While the
    simulator is paused the clock goes on (a tick per 10 ms of wall time) with no record: a
    silent sensor on the simulated timeline."""

    TICK_NS = 20_000_000

    def __init__(self, ros, sim, diag):
        super().__init__(name='simulated-lab', daemon=True)
        self.clock_pub = ros.publisher(Clock, '/clock')
        self.sim, self.diag = sim, diag
        self.per_tick = round(sim.rate_hz * self.TICK_NS * 1e-9)
        self.now_ns = 1_000_000_000
        self.k = 0                                      # records sent
        self.barrier_misses = 0
        self.done = threading.Event()
        self.start()

    def _publish_clock(self):
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(self.now_ns, 10**9)
        self.clock_pub.publish(msg)

    def run(self):
        while not self.done.is_set():
            if not self.sim.streaming:                  # the node starts its stream after the first /clock
                self._publish_clock()
                self.done.wait(0.01)
                continue
            wrenches = [self.sim.source((self.k + i) / self.sim.rate_hz) for i in range(self.per_tick)]
            sent = self.sim.emit(wrenches)
            self.k += sent
            self.now_ns += self.TICK_NS
            now = self.now_ns
            self._publish_clock()
            if not sent:                                 # silent sensor: the clock goes on alone
                self.done.wait(0.01)
            elif not self.diag.wait_for(lambda m: bool(m) and stamp_ns(m[-1]) >= now, 30.0):
                self.barrier_misses += 1                 # (reported by the test; the clock goes on)

    def stop(self):
        self.done.set()
        self.join(timeout=15.0)


class Harness:
    """A driver process plus the test client's subscriptions to its topics; with ``lab_sim``
    (a paced=False simulator) the node runs under ``use_sim_time`` on a :class:`SimulatedLab`."""

    def __init__(self, ros, params, namespace, base_yaml=CONFIG / 'ft_sensor.yaml', lab_sim=None):
        self.ros = ros
        # generous unless the test is about staleness: the simulator runs in the (busy) test process
        params = {'stale_timeout_ms': 1000.0, **params}
        if lab_sim is not None:
            params = {**params, 'use_sim_time': True, 'diagnostics_period_s': SimulatedLab.TICK_NS * 1e-9}
        self.proc = DriverProcess(params, namespace=namespace, base_yaml=base_yaml)
        self.ns = namespace
        self.raw = ros.subscribe(WrenchStamped, f'{namespace}/ft/wrench_raw')
        self.out = ros.subscribe(WrenchStamped, f'{namespace}/ft/wrench')
        self.fault = ros.subscribe(DiagnosticStatus, f'{namespace}/ft/fault', FAULT_QOS)
        self.diag = ros.subscribe(DiagnosticArray, '/diagnostics')
        self.lab = SimulatedLab(ros, lab_sim, self.diag) if lab_sim is not None else None

    def wait_raw(self, n=20, timeout_s=60.0):
        ok = self.raw.wait_count(n, timeout_s)
        assert ok, f'no raw wrench from the driver; its log:\n{self.proc.log()}'

    def call(self, name, timeout_s=10.0):
        resp = self.ros.call(Trigger, f'{self.ns}/ft/{name}', timeout_s=timeout_s)
        assert resp is not None, f'service {name} did not answer; log:\n{self.proc.log()}'
        return resp

    def diagnostics(self, predicate=lambda v: True, timeout_s=10.0):
        """The newest diagnostics of this driver satisfying predicate."""
        found = {}

        def check(msgs):
            for m in reversed(msgs):
                v = diagnostic_values(m, f'{self.ns}/ft_sensor: F/T sensor')
                if v is not None:
                    if predicate(v):
                        found['v'] = v
                        return True
                    return False
            return False

        if not self.diag.wait_for(check, timeout_s):
            last = None
            for m in reversed(self.diag.snapshot()):
                last = diagnostic_values(m, f'{self.ns}/ft_sensor: F/T sensor')
                if last is not None:
                    break
            log = '\n'.join(line for line in self.proc.log().splitlines() if ']: parameter ' not in line)
            raise AssertionError(f'diagnostics never matched; last: {last}\nlog:\n{log}')
        return found['v']

    def close(self):
        if self.lab is not None:
            self.lab.stop()
        code = self.proc.stop()
        return code


def test_known_profile_arrives_scaled_tared_filtered_and_transformed(ros, sims):
    cal = rdt.Calibration(1_000_000, 100_000, 'kN', 'N-mm')       # counts read from the sensor page
    bias = [2.0, -1.0, 3.0, 0.2, -0.1, 0.3]
    source = ConstantSource([0.0] * 6)
    sim = sims(source, calibration=cal, http_port=0, rate_hz=1000.0, bias=bias)
    q_z90 = [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]
    p = [0.0, 0.0, -2.9]                                          # sensor 2.9 m from the client CoM
    h = Harness(ros, {
        'sensor_port': sim.port, 'sensor_rate_hz': 1000.0,
        'calibration.source': 'sensor', 'calibration.http_port': sim.http_port,
        'low_pass.cutoff_hz': 20.0, 'low_pass.order': 2, 'software_bias.samples': 100,
        'target_frame.enabled': True, 'target_frame.frame_id': 'client_com',
        'target_frame.sensor_in_target_xyz_m': p, 'target_frame.sensor_in_target_xyzw': q_z90,
        'overload.limits': [1000.0, 1000.0, 1000.0, 100.0, 100.0, 100.0],
    }, '/e2e_profile')
    try:
        h.wait_raw()
        assert 'scale: 1e+06 counts/kN, 100000 counts/N-mm (from http://127.0.0.1' in h.proc.log()
        raw = h.raw.last()
        assert raw.header.frame_id == 'ft_sensor'
        np.testing.assert_allclose(vec(raw), bias, atol=1e-3)     # scaled: the sensor's offset in SI
        assert h.out.wait_count(5)
        assert h.out.last().header.frame_id == 'client_com'
        # stamps: the sample times, recent and increasing
        stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in h.raw.snapshot()[-50:]]
        assert all(b > a for a, b in zip(stamps, stamps[1:]))
        assert 0 < time.time_ns() - stamps[-1] < 2e9

        # tare over DDS
        resp = h.call('tare')
        assert resp.success, resp.message
        h.out.clear()
        assert h.out.wait_count(30)
        np.testing.assert_allclose(vec(h.out.last()), [0.0] * 6, atol=2e-3)

        # a known constant wrench arrives transformed to the client CoM frame
        w = [10.0, -4.0, 5.0, 0.5, 1.0, -0.2]
        source.set(w)
        time.sleep(0.6)                                           # the 20 Hz filter settles in ~0.1 s
        h.out.clear()
        assert h.out.wait_count(20)
        expected = WrenchTransform(p, q_z90).apply(w)
        np.testing.assert_allclose(vec(h.out.last()), expected, atol=5e-3)

        # a 100 Hz sine (5x the cut-off) is attenuated as the filter is specified
        amp = 20.0
        source_sine = SineSource([amp, 0, 0, 0, 0, 0], 100.0)
        sim.set_source(source_sine)
        time.sleep(0.3)
        h.raw.clear()
        h.out.clear()
        time.sleep(1.5)
        raw_fx = np.array([vec(m)[0] for m in h.raw.snapshot()]) - bias[0]
        out_fy = np.array([vec(m)[1] for m in h.out.snapshot()])   # sensor x is target y after Rz(90)
        assert len(raw_fx) > 500 and len(out_fy) > 500
        rms = lambda x: float(np.sqrt(np.mean((x - np.mean(x)) ** 2)))  # noqa: E731
        assert rms(raw_fx) == pytest.approx(amp / math.sqrt(2), rel=0.05)
        expected_gain = LowPassFilter(20.0, 1000.0, 2).gain(100.0)
        assert rms(out_fy) / rms(raw_fx) == pytest.approx(expected_gain, rel=0.15)
        assert expected_gain < 0.05
    finally:
        assert h.close() == 0, h.proc.log()


def test_overload_and_stale_faults_latch_and_reset(ros, sims):
    """On the simulated timeline (use_sim_time, /clock from the test): an overload latches, the
    processed wrench stops while the raw one goes on, a reset clears it; a silent sensor latches
    stale after 300 ms of simulated time, a reset is refused while stale, the latch stays after
    the samples are back (manual policy) until a reset; exactly one stale event."""
    state = {'spike': False}

    def profile(t):
        if state['spike']:
            state['spike'] = False
            return [0.0, 0.0, 900.0, 0.0, 0.0, 0.0]               # one record above the limit
        return [0.0, 0.0, 50.0, 0.0, 0.0, 0.0]

    sim = sims(profile, rate_hz=1000.0, paced=False)
    h = Harness(ros, {'sensor_port': sim.port, 'sensor_rate_hz': 1000.0, 'stale_timeout_ms': 300.0,
                      'stale_recovery.auto': False,
                      'overload.limits': [100.0, 100.0, 500.0, 10.0, 10.0, 10.0]}, '/e2e_faults', lab_sim=sim)
    try:
        h.wait_raw()
        assert h.out.wait_count(5, 60.0)
        state['spike'] = True
        assert h.fault.wait_for(lambda m: any(x.level == DiagnosticStatus.ERROR for x in m), 30.0), h.proc.log()
        latched = [x for x in h.fault.snapshot() if x.level == DiagnosticStatus.ERROR][-1]
        assert latched.message.startswith('overload: fz = 900')
        # the processed wrench stops, the raw one goes on (each tick of the lab ends with a raw one)
        assert h.raw.wait_count(len(h.raw) + 10, 60.0)           # what was on its way before the latch
        h.out.clear()
        h.raw.clear()
        assert h.raw.wait_count(15, 60.0)                         # 15 ticks: 0.3 s of simulated time
        assert len(h.out) == 0
        v = h.diagnostics(lambda v: v['fault'] == 'overload', 60.0)
        assert v['overloads'] == '1'
        resp = h.call('reset_fault', 60.0)
        assert resp.success, resp.message
        assert h.out.wait_count(20, 60.0)
        assert h.fault.wait_for(lambda m: m[-1].level == DiagnosticStatus.OK, 60.0)

        # stale: the sensor goes silent
        h.fault.clear()
        sim.pause()
        assert h.fault.wait_for(lambda m: any(x.level == DiagnosticStatus.ERROR and x.message.startswith('stale')
                                              for x in m), 60.0), h.proc.log()
        resp = h.call('reset_fault', 60.0)
        assert not resp.success and 'stale' in resp.message
        h.out.clear()
        h.raw.clear()
        sim.resume()
        assert h.raw.wait_count(20, 60.0), h.proc.log()          # the samples are back (raw goes on) ...
        assert len(h.out) == 0                                    # ... and the fault stays latched until reset
        resp = h.call('reset_fault', 60.0)
        assert resp.success, resp.message
        assert h.out.wait_count(20, 60.0)
        v = h.diagnostics(lambda v: v['fault'] == 'none' and int(v['accepted']) > 0, 60.0)
        assert (v['stale_events'], v['fault_count']) == ('1', '2'), v
        assert h.lab.barrier_misses == 0
    finally:
        assert h.close() == 0, h.proc.log()


def test_loss_reordering_and_wraparound_counted_exactly(ros, sims):
    U = 2**32
    sim = sims(ConstantSource([1.0, 0, 0, 0, 0, 0]), rate_hz=1000.0, start_sequence=U - 100,
               drop={U - 90, U - 1, 0, 1, 40}, delay={U - 50: 4, 10: 1, 20: 7}, duplicate={U - 2, 30, 31})
    h = Harness(ros, {'sensor_port': sim.port, 'sensor_rate_hz': 1000.0, 'diagnostics_period_s': 0.2},
                '/e2e_sequence')
    try:
        h.wait_raw()
        v = h.diagnostics(lambda v: int(v['records']) > 300)
        assert (v['lost'], v['out_of_order'], v['duplicates']) == ('5', '3', '3'), v
        assert (v['rejected_sequence'], v['resyncs'], v['malformed']) == ('0', '0', '0')
        assert int(v['accepted']) == int(v['records']) - 3 - 3
    finally:
        assert h.close() == 0, h.proc.log()


def test_malformed_and_random_datagrams_are_survived(ros, sims):
    sim = sims(ConstantSource([1.0, 2.0, 3.0, 0, 0, 0]), rate_hz=500.0)
    h = Harness(ros, {'sensor_port': sim.port, 'sensor_rate_hz': 500.0, 'diagnostics_period_s': 0.2,
                      'low_pass.cutoff_hz': 50.0}, '/e2e_malformed')
    rng = random.Random(3)
    try:
        h.wait_raw()
        # the flood starts once the driver has measured the stream's rate (what it survives is the
        # flood, not a rate window skewed by this busy process's simulator thread)
        v = h.diagnostics(lambda v: math.isfinite(float(v['measured_rate_hz'])), timeout_s=20.0)
        assert v['fault'] == 'none', v['fault_detail']
        bad = 0
        for i in range(1000):
            n = rng.randrange(0, 400)
            if n % 36 == 0:
                n += 1                                            # wrong length, every one of them
            sim.inject(rng.randbytes(n))
            bad += 1
            if i % 50 == 49:
                # pace: the node must read them all (a full kernel buffer would drop some,
                # and the exact count below could not hold)
                h.diagnostics(lambda v, b=bad: int(v['malformed']) >= b, timeout_s=20.0)
        sim.inject(rdt.encode_request(rdt.CMD_START_REALTIME))   # a request echoed back: wrong length
        bad += 1
        v = h.diagnostics(lambda v: int(v['malformed']) >= bad)
        assert v['malformed'] == str(bad)
        assert h.proc.proc.poll() is None                         # alive
        h.raw.clear()
        assert h.raw.wait_count(50)
        np.testing.assert_allclose(vec(h.raw.last()), [1.0, 2.0, 3.0, 0, 0, 0], atol=1e-6)
        assert v['fault'] == 'none', v['fault_detail']
    finally:
        assert h.close() == 0, h.proc.log()


def test_gravity_compensation_from_pose_topic(ros, sims):
    from scipy.spatial.transform import Rotation

    q = Rotation.from_euler('xyz', [20, 35, -15], degrees=True).as_quat()
    tool = ToolGravity(4.0, [0.0, 0.02, 0.06])
    tool.set_flange_orientation(q)
    applied = [2.0, -1.0, 0.5, 0.05, 0.0, -0.05]
    sim = sims(ConstantSource(list(np.add(tool.wrench, applied))), rate_hz=1000.0, paced=False)
    h = Harness(ros, {'sensor_port': sim.port, 'sensor_rate_hz': 1000.0,
                      'gravity_compensation.enabled': True, 'gravity_compensation.tool_mass_kg': 4.0,
                      'gravity_compensation.tool_com_m': [0.0, 0.02, 0.06],
                      'gravity_compensation.pose_topic': 'flange_pose'}, '/e2e_gravity', lab_sim=sim)
    try:
        h.wait_raw()
        assert len(h.out) == 0                                    # withheld until a pose arrives
        v = h.diagnostics(lambda v: v['gravity_ready'] == 'False', 60.0)
        pub = ros.publisher(PoseStamped, '/e2e_gravity/flange_pose')
        msg = PoseStamped()
        msg.header.frame_id = 'lab_world'
        msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = \
            (float(c) for c in q)
        deadline = time.monotonic() + 60.0
        while len(h.out) < 30 and time.monotonic() < deadline:
            pub.publish(msg)
            time.sleep(0.05)
        assert len(h.out) >= 30, h.proc.log()
        n = len(h.out)
        assert h.out.wait_count(n + 5, 60.0)                      # 5 more ticks: the filter has settled
        np.testing.assert_allclose(vec(h.out.last()), applied, atol=2e-3)
        v = h.diagnostics(lambda v: v['gravity_ready'] == 'True', 60.0)
        assert int(v['pose_updates']) >= 1
    finally:
        assert h.close() == 0, h.proc.log()


def test_lifecycle_transitions_drive_the_sensor(ros, sims):
    sim = sims(ConstantSource([0.0, 0.0, 1.0, 0, 0, 0]), rate_hz=500.0)
    h = Harness(ros, {'sensor_port': sim.port, 'sensor_rate_hz': 500.0, 'low_pass.cutoff_hz': 50.0,
                      'autostart': False}, '/e2e_lifecycle')

    def change(transition_id):
        req = ChangeState.Request()
        req.transition.id = transition_id
        resp = ros.call(ChangeState, '/e2e_lifecycle/ft_sensor/change_state', req)
        assert resp is not None and resp.success, h.proc.log()

    def state():
        return ros.call(GetState, '/e2e_lifecycle/ft_sensor/get_state').current_state.id

    try:
        assert state() == State.PRIMARY_STATE_UNCONFIGURED
        time.sleep(0.3)
        assert len(h.raw) == 0 and not sim.stats.requests
        change(Transition.TRANSITION_CONFIGURE)
        assert state() == State.PRIMARY_STATE_INACTIVE
        assert not sim.stats.requests
        change(Transition.TRANSITION_ACTIVATE)
        assert state() == State.PRIMARY_STATE_ACTIVE
        h.wait_raw()
        assert sim.stats.requests == {'start_realtime': 1}
        change(Transition.TRANSITION_DEACTIVATE)
        assert sim.wait_for(lambda: sim.stats.requests.get('stop') == 1)
        time.sleep(0.2)
        h.raw.clear()
        time.sleep(0.3)
        assert len(h.raw) == 0
        change(Transition.TRANSITION_CLEANUP)
        change(Transition.TRANSITION_CONFIGURE)
        change(Transition.TRANSITION_ACTIVATE)
        h.wait_raw()
        assert sim.stats.requests.get('start_realtime') == 2
    finally:
        assert h.close() == 0, h.proc.log()


def test_start_up_errors_name_the_parameter(tmp_path):
    bad = DriverProcess({'low_pass.cutoff_hz': 600.0, 'sensor_rate_hz': 1000.0}, namespace='/e2e_bad')
    assert bad.wait_exit(20.0) == 2, bad.log()
    assert "parameter 'low_pass.cutoff_hz'" in bad.log()
    bad.stop()
    bad = DriverProcess({'sensor_ip': '300.1.2.3'}, namespace='/e2e_bad')
    assert bad.wait_exit(20.0) == 2, bad.log()
    assert "parameter 'sensor_ip'" in bad.log()
    bad.stop()
    # stamps by the sensor's sample count are the lab twin's, on its simulated clock only
    bad = DriverProcess({'sensor_clock_stamps': True, 'sensor_rate_hz': 1000.0}, namespace='/e2e_bad')
    assert bad.wait_exit(20.0) == 2, bad.log()
    assert "parameter 'sensor_clock_stamps'" in bad.log() and 'use_sim_time' in bad.log()
    bad.stop()
    # the calibration page cannot be read: configure fails loudly, the process exits 1
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        closed_port = s.getsockname()[1]
    bad = DriverProcess({'calibration.source': 'sensor', 'calibration.http_port': closed_port,
                         'calibration.timeout_s': 0.5}, namespace='/e2e_bad')
    assert bad.wait_exit(20.0) == 1, bad.log()
    assert 'cannot read http://127.0.0.1' in bad.log()
    bad.stop()


def test_simulator_node_and_driver_node_from_the_shipped_yaml(ros):
    """Both executables with the package's YAML files, the simulator fed from a topic."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    sim = DriverProcess({'port': port, 'source': 'topic', 'noise_std': [0.0] * 6,
                         'bias': [0.0] * 6}, namespace='/e2e_pair', base_yaml=CONFIG / 'ft_sensor_sim.yaml',
                        executable='ft_sensor_sim_node', node_name='ft_sensor_sim')
    h = Harness(ros, {'sensor_port': port}, '/e2e_pair')
    try:
        h.wait_raw()
        # If the simulator came up after the driver, the driver latched 'stale' at start-up
        # (and re-sent its start command): reset it now that data flows.
        assert h.call('reset_fault').success
        pub = ros.publisher(WrenchStamped, '/e2e_pair/sim/wrench_in')
        msg = WrenchStamped()
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.torque.z = 7.0, -3.0, 0.25
        deadline = time.monotonic() + 10.0
        target = [7.0, -3.0, 0.0, 0.0, 0.0, 0.25]
        while time.monotonic() < deadline:
            pub.publish(msg)
            time.sleep(0.05)
            last = h.out.last()
            if last is not None and np.allclose(vec(last), target, atol=1e-3):
                break
        np.testing.assert_allclose(vec(h.out.last()), target, atol=1e-3)
    finally:
        assert h.close() == 0, h.proc.log()
        assert sim.stop() == 0, sim.log()


def test_executables_are_installed():
    for name in ('ft_sensor_node', 'ft_sensor_sim_node', 'rdt_sim'):
        assert Path(find_executable(name)).exists()
