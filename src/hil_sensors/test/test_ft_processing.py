"""Processing chain: filter against scipy, gravity compensation, frame transform against
hil_dynamics.se3 (Pinocchio), tare, fault latch, parameter validation."""

import math

import numpy as np
import pytest
from scipy import signal
from scipy.spatial.transform import Rotation

from hil_common.params import ParameterError
from hil_sensors.ft_driver import PARAMS, check_parameters
from hil_sensors.processing import (FaultLatch, LowPassFilter, Tare, ToolGravity, WrenchChain, WrenchTransform,
                                    overload_axis, quaternion_to_matrix, soft_deadband)


@pytest.mark.parametrize('order', [1, 2])
def test_filter_matches_scipy_butterworth(order):
    fs, fc = 7000.0, 150.0
    f = LowPassFilter(fc, fs, order)
    b, a = signal.butter(order, fc, btype='low', fs=fs)
    np.testing.assert_allclose(f.b[:order + 1], b, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(f.a[:order + 1], a, rtol=1e-12, atol=1e-15)
    assert f.gain(0.0) == pytest.approx(1.0, abs=1e-12)
    assert f.gain(fc) == pytest.approx(1 / math.sqrt(2), rel=1e-9)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 6)) + np.linspace(0, 5, 2000)[:, None]
    f.reset(x[0])
    ours = np.array([f.step(row) for row in x])
    zi = signal.lfilter_zi(b, a)
    ref = np.column_stack([signal.lfilter(b, a, x[:, k], zi=zi * x[0, k])[0] for k in range(6)])
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)


def test_filter_steady_state_start_and_nyquist_check():
    f = LowPassFilter(100.0, 1000.0, 2)
    const = [1.0, -2.0, 3.0, 0.1, -0.2, 0.3]
    for _ in range(50):
        assert f.step(const) == pytest.approx(const, abs=1e-12)   # primed on the first sample: no transient
    with pytest.raises(ValueError, match='Nyquist'):
        LowPassFilter(500.0, 1000.0)
    with pytest.raises(ValueError, match='order'):
        LowPassFilter(10.0, 1000.0, 3)


def test_quaternion_matches_scipy():
    rng = np.random.default_rng(1)
    for q in rng.normal(size=(20, 4)):
        np.testing.assert_allclose(quaternion_to_matrix(q), Rotation.from_quat(q).as_matrix(), atol=1e-12)
    with pytest.raises(ValueError):
        quaternion_to_matrix([0, 0, 0, 0])


def test_tool_gravity_in_sensor_frame():
    m, g = 2.0, 9.80665
    tool = ToolGravity(m, [0.1, 0.0, 0.0])
    tool.set_flange_orientation([0, 0, 0, 1])     # sensor z up: weight pulls along -z
    np.testing.assert_allclose(tool.wrench, [0, 0, -m * g, 0, 0.1 * m * g, 0], atol=1e-12)
    tool.set_flange_orientation(Rotation.from_euler('x', 180, degrees=True).as_quat())   # upside down
    np.testing.assert_allclose(tool.wrench, [0, 0, m * g, 0, -0.1 * m * g, 0], atol=1e-12)
    # sensor mounted on the flange rotated 90 deg about y: flange level, sensor z horizontal
    mounted = ToolGravity(m, [0, 0, 0], rotation_sensor_in_flange=Rotation.from_euler('y', 90, degrees=True).as_quat())
    mounted.set_flange_orientation([0, 0, 0, 1])
    # world -z expressed in the sensor frame: R_ws^T [0,0,-g] with R_ws = Ry(90)
    np.testing.assert_allclose(mounted.wrench[:3], [m * g, 0, 0], atol=1e-12)


def test_transform_matches_hil_dynamics_convention():
    from hil_dynamics import se3

    rng = np.random.default_rng(2)
    for _ in range(10):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        p = rng.normal(size=3)
        w = rng.normal(size=6)
        ours = WrenchTransform(p, q).apply(w)
        ref = se3.transform_wrench(se3.pose_from_quaternion(q, p), w)
        np.testing.assert_allclose(ours, ref, atol=1e-12)
    # Envisat-like: sensor 2.9 m from the CoM along z, a pure force along x makes a moment about y
    t = WrenchTransform([0, 0, -2.9], [0, 0, 0, 1])
    np.testing.assert_allclose(t.apply([10, 0, 0, 0, 0, 0]), [10, 0, 0, 0, -29.0, 0], atol=1e-12)


def test_tare_mean():
    b = Tare()
    b.start(4)
    assert b.collecting and not b.active
    samples = [[1, 2, 3, 4, 5, 6], [3, 2, 1, 0, -1, -2], [1, 1, 1, 1, 1, 1], [3, 3, 3, 3, 3, 3]]
    done = [b.add(s) for s in samples]
    assert done == [False, False, False, True]
    assert b.offset == pytest.approx([2, 2, 2, 2, 2, 2])
    assert b.active and b.count == 1 and not b.collecting
    b.clear()
    assert b.offset == [0.0] * 6 and not b.active


def test_wrench_chain_against_a_step_by_step_reference():
    """Tare -> tool gravity -> filter -> dead band -> frame transform, against scipy's Butterworth
    (signal.butter + lfilter from steady state) and numpy for the rest."""
    from scipy import signal
    rng = np.random.default_rng(4)
    rot = Rotation.from_euler('xyz', [0.3, -0.7, 1.1])
    mass, com, g = 1.7, np.array([0.01, -0.02, 0.08]), np.array([0.0, 0.0, -9.81])
    offset = np.array([1.5, -0.8, 2.0, 0.05, -0.03, 0.02])
    band = np.array([0.3, 0.3, 0.3, 0.02, 0.02, 0.02])
    gravity = ToolGravity(mass, com, g)
    gravity.set_sensor_rotation(rot.as_matrix())
    chain = WrenchChain(gravity, LowPassFilter(30.0, 1000.0, 2), band, WrenchTransform([0.1, 0.2, -2.9], rot.as_quat()))
    f_g = mass * rot.as_matrix().T @ g
    weight = np.concatenate([f_g, np.cross(com, f_g)])
    chain.tare.start(50)
    still = offset + weight + 0.01 * rng.standard_normal((50, 6))
    for w in still:
        chain.process(w)
    assert chain.tare.active
    np.testing.assert_allclose(chain.tare.offset, (still - weight).mean(axis=0), atol=1e-12)
    chain.filter.reset()                                   # the reference starts in steady state at the first sample
    contact = np.outer(np.sin(np.linspace(0, 6, 300)), [20.0, -5.0, 3.0, 0.5, 0.2, -0.1])
    raw = offset + weight + contact
    out = np.array([chain.in_target_frame(chain.process(w)) for w in raw])
    b, a = signal.butter(2, 30.0, fs=1000.0)
    comp = raw - weight - (still - weight).mean(axis=0)
    filtered = np.column_stack([signal.lfilter(b, a, comp[:, i], zi=signal.lfilter_zi(b, a) * comp[0, i])[0]
                                for i in range(6)])
    banded = np.sign(filtered) * np.maximum(np.abs(filtered) - band, 0.0)
    p, r = np.array([0.1, 0.2, -2.9]), rot.as_matrix()
    f_t = banded[:, :3] @ r.T
    expected = np.hstack([f_t, banded[:, 3:] @ r.T + np.cross(p, f_t)])
    np.testing.assert_allclose(out, expected, atol=1e-9)
    assert np.abs(out).max() > 10.0                        # the contact went through
    assert chain.process([math.nan] * 6) is None           # a non-finite sample is dropped


@pytest.mark.parametrize('with_gravity', [False, True])
def test_a_sample_of_other_than_six_values_is_refused_by_name(with_gravity):
    """Five or seven values raise InputError before anything is subtracted (the gravity's six values would
    otherwise cut a seventh off without a word), and the tare collects nothing from them."""
    from hil_common.errors import InputError

    gravity = ToolGravity(1.0, np.zeros(3), np.array([0.0, 0.0, -9.81])) if with_gravity else None
    if gravity is not None:
        gravity.set_sensor_rotation(np.eye(3))
    chain = WrenchChain(gravity)
    chain.tare.start(3)
    for bad in ([1.0] * 5, [1.0] * 7, np.ones(7)):
        with pytest.raises(InputError, match='6 values'):
            chain.process(bad)
    assert chain.tare.collecting and not chain.tare.active
    assert chain.process([1.0] * 6) is not None


def test_fault_latch_keeps_first_cause():
    f = FaultLatch()
    assert f.trip('overload', 'fz', 1)
    assert not f.trip('stale', 'late', 2)
    assert (f.active, f.reason, f.count, f.by_reason) == (True, 'overload', 1, {'overload': 1, 'stale': 1})
    f.reset()
    assert not f.active
    assert overload_axis([0, 0, 0, 0, 0, 11], [10] * 6) == 5
    assert overload_axis([0, 0, -10.0, 0, 0, 0], [10] * 6) == -1


@pytest.mark.parametrize('values, message', [
    ({'sensor_ip': 'sensor.local'}, "'sensor_ip'"),
    ({'sensor_port': 0}, "'sensor_port'"),
    ({'rdt_mode': 'fast'}, "'rdt_mode'"),
    ({'low_pass.cutoff_hz': 4000.0, 'sensor_rate_hz': 7000.0}, "'low_pass.cutoff_hz'"),
    ({'calibration.force_unit': 'stone'}, "'calibration.force_unit'"),
    ({'overload.limits': [1.0, 2.0]}, "'overload.limits'"),
    ({'overload.limits': [1.0, 1.0, 1.0, 1.0, 1.0, -1.0]}, "'overload.limits'"),
    ({'gravity_compensation.enabled': True}, "'gravity_compensation.tool_mass_kg'"),
    ({'target_frame.sensor_in_target_xyzw': [0.0, 0.0, 0.0, 2.0]}, "'target_frame.sensor_in_target_xyzw'"),
    ({'stale_timeout_ms': 0.0}, "'stale_timeout_ms'"),
    ({'no_such_parameter': 1}, "'no_such_parameter'"),
])
def test_parameters_validated_with_errors_naming_the_parameter(values, message):
    with pytest.raises(ParameterError, match=message):
        check_parameters(values)


def test_parameter_defaults_are_valid_and_documented():
    cfg = check_parameters({})
    assert cfg['sensor_port'] == 49152 and cfg['publish_rate_hz'] == 0.0
    assert all(p.description for p in PARAMS)


def test_soft_deadband_is_zero_inside_continuous_at_the_edge_and_shifted_outside():
    widths = [0.25, 0.25, 0.25, 0.015, 0.015, 0.0]
    assert soft_deadband([0.2, -0.25, 0.0, 0.01, -0.015, 0.0], widths) == [0.0] * 6
    out = soft_deadband([1.25, -1.25, 0.25 + 1e-9, 0.115, -0.015 - 1e-9, -3.0], widths)
    assert out == pytest.approx([1.0, -1.0, 1e-9, 0.1, -1e-9, -3.0], abs=1e-12)


def test_soft_deadband_keeps_white_noise_from_accumulating():
    """Integrated twice (an admittance), 5-sigma banded noise stays at zero; raw noise walks away."""
    rng = np.random.default_rng(3)
    noise = rng.normal(0.0, 0.05, size=(60_000, 6))
    banded = np.array([soft_deadband(row, [0.25] * 6) for row in noise[:, :]])
    drift_raw = np.abs(np.cumsum(np.cumsum(noise, axis=0), axis=0)[-1]).max()
    drift_banded = np.abs(np.cumsum(np.cumsum(banded, axis=0), axis=0)[-1]).max()
    assert drift_raw > 1e3 * max(drift_banded, 1e-9)


def test_publish_decimation_keeps_the_rate_and_never_an_older_sample():
    from hil_sensors.ft_driver import PublishDecimator
    for rate, expected in ((250.0, 250), (0.0, 1000), (300.0, 250)):   # 300 Hz of a 1 kHz stream: every 4th sample
        d = PublishDecimator(rate)
        published = []
        for k in range(1000):                               # one second at 1 kHz
            stamp = 1_000_000 * k + 5_000_000_000
            if d.admit(stamp):
                d.published(stamp)
                published.append(stamp)
        assert len(published) == expected
        assert np.all(np.diff(published) >= (1e9 / rate if rate else 0))


def test_a_batching_receive_loop_sleeps_only_until_the_next_publication_can_be_due():
    """Reading the records between two publications in one batch loses none of them (all are in
    the socket with their receive stamps) and publishes exactly as the per-record loop does."""
    from hil_sensors.ft_driver import PublishDecimator
    margin = 1_000_000
    period = {}
    for batched in (False, True):
        d, now, published, woken = PublishDecimator(100.0), 5_000_000_000, [], 0
        assert d.idle_ns(now, margin) == 0                  # before the first publication: no sleeping
        arrivals = [5_000_000_000 + 1_000_000 * k for k in range(1000)]  # 1 kHz, one second
        i = 0
        while i < len(arrivals):
            if batched:
                now = max(now, arrivals[i]) + d.idle_ns(max(now, arrivals[i]), margin)
            else:
                now = arrivals[i]
            woken += 1
            newest = None
            while i < len(arrivals) and arrivals[i] <= now:   # drain what has arrived
                newest = arrivals[i]
                i += 1
            if newest is not None and d.admit(newest):
                d.published(newest)
                published.append(newest)
        period[batched] = (published, woken)
    assert period[True][0] == period[False][0] and len(period[True][0]) == 100
    assert period[True][1] < 0.3 * period[False][1], period[True][1]


def test_diagnostic_level_from_the_driver_snapshot():
    from hil_sensors.ft_driver import FtDriver, diagnostic_status
    driver = FtDriver(check_parameters({'sensor_rate_hz': 1000.0, 'gravity_compensation.enabled': True,
                                        'gravity_compensation.tool_mass_kg': 1.0}))
    snap = driver.snapshot(0)
    assert diagnostic_status(snap) == ('WARN', 'waiting for the pose input (processed wrench withheld)')
    driver.set_flange_orientation([0.0, 0.0, 0.0, 1.0])
    snap = driver.snapshot(0)
    assert diagnostic_status(snap) == ('WARN', 'not streaming')
    streaming = {**snap, 'streaming': True, 'stream_state': 'ok'}
    assert diagnostic_status(streaming, snap) == ('OK', 'streaming')
    assert diagnostic_status({**streaming, 'seq_lost': 3}, streaming)[0] == 'WARN'
    assert diagnostic_status({**streaming, 'stream_state': 'waiting', 'stream_detail': 'w'}) == ('WARN', 'w')
    assert diagnostic_status({**streaming, 'stream_state': 'no_data', 'stream_detail': 'n'}) == ('ERROR', 'n')
    assert diagnostic_status({**streaming, 'last_status': 0x20000, 'last_status_bits': ['x']}) == ('ERROR', 'sensor status: x')
    driver.fault.trip('overload', 'fx = 600 exceeds the limit 500', 0)
    level, message = diagnostic_status(driver.snapshot(0))
    assert level == 'ERROR' and message.startswith('FAULT overload')
