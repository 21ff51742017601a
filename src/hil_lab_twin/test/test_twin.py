"""The MuJoCo twin: same kinematics as the motion tables, delay, servo, lockstep, F/T physics, rendering."""

import math
import zlib

import numpy as np
import pinocchio as pin
import pytest

from hil_lab_twin.pacing import RealTimePacer
from hil_lab_twin.scene import FtConfig, PressConfig, RobotConfig, TwinConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics import HexapodKinematics, SerialKinematics, pose_error
from hil_motion_table.robot_models import hexapod_spec, kr120r2500pro_spec, ur10e_spec

import mujoco


def quiet(**kw):
    return FtConfig(noise_force_std=0.0, noise_torque_std=0.0, **kw)


@pytest.fixture(scope='module')
def serial_twin_config():
    return facility_config('serial')


@pytest.mark.parametrize('model, make_spec', [('ur10e', ur10e_spec), ('kr120r2500pro', kr120r2500pro_spec)])
def test_twin_kinematics_equal_the_motion_table_urdf(model, make_spec):
    twin = LabTwin(TwinConfig(robots=(RobotConfig('table', model=model, payload='none', base_xyz=(0.3, -0.2, 0.4),
                                                  base_rpy=(0.0, 0.0, 0.7)),)))
    kin = SerialKinematics(make_spec())
    robot = twin._robots['table']
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = rng.uniform(kin.q_min, kin.q_max) * 0.8
        twin.data.qpos[robot.qpos_adr] = q
        mujoco.mj_forward(twin.model, twin.data)
        assert np.linalg.norm(pose_error(twin.flange_pose('table'), kin.forward(q))) < 1e-9


def test_position_command_waits_for_the_transport_delay_then_settles(serial_twin_config):
    twin = LabTwin(serial_twin_config)
    q0 = twin.joint_state('client').positions
    twin.step(20)
    goal = q0 + np.array([0.02, -0.01, 0.01, 0.0, 0.02, -0.02])
    assert twin.command_positions('client', goal)
    delay_steps = round(0.004 / twin.dt)
    twin.step(delay_steps)  # the command takes effect in the step that starts at t0 + delay
    np.testing.assert_allclose(twin.joint_state('client').positions, q0, atol=1e-12)
    twin.step(2)
    assert np.max(np.abs(twin.joint_state('client').positions - q0)) > 1e-7
    twin.step(1500)
    np.testing.assert_allclose(twin.joint_state('client').positions, goal, atol=1e-6)


def test_step_response_is_band_limited():
    # 10 Hz first-order servo after 4 ms delay, tracked by a 25 Hz PID: 63 % of a step is
    # reached no earlier than delay + 1/(2 pi 10 Hz) and well before 3 time constants more.
    twin = LabTwin(facility_config('serial'))
    q0 = twin.joint_state('client').positions
    goal = q0.copy()
    goal[0] += 0.01
    twin.command_positions('client', goal)
    times = []
    for k in range(400):
        twin.step()
        if twin.joint_state('client').positions[0] - q0[0] >= 0.0063:
            times.append(twin.time)
            break
    tau = 1 / (2 * math.pi * 10.0)
    assert times and 0.004 + tau <= times[0] <= 0.004 + tau + 3 / (2 * math.pi * 25.0)


def test_lockstep_is_deterministic():
    def run():
        twin = LabTwin(facility_config('hexapod', ft=FtConfig(seed=3)))
        q0 = twin.joint_state('client').positions
        for k in range(300):
            if k % 4 == 0:
                twin.command_positions('client', q0 + 0.01 * math.sin(0.02 * k))
            twin.step()
        return twin.data.qpos.copy(), twin.wrench_source('client_ft')()[0]
    (q_a, w_a), (q_b, w_b) = run(), run()
    np.testing.assert_array_equal(q_a, q_b)
    np.testing.assert_array_equal(w_a, w_b)


def test_bad_commands_are_rejected_and_leave_the_robot_alone(serial_twin_config):
    twin = LabTwin(serial_twin_config)
    q0 = twin.joint_state('client').positions
    assert not twin.command_positions('client', q0[:5])
    assert not twin.command_positions('client', np.append(q0, 0.0))
    assert not twin.command_positions('client', np.where(np.arange(6) == 2, np.nan, q0))
    names = twin.joint_names('client')
    assert not twin.command_trajectory('client', names, [(0.1, q0), (0.05, q0)])
    assert not twin.command_trajectory('client', names[:5], [(0.1, q0[:5])])
    assert twin.rejected_count('client') == 5
    twin.step(200)
    np.testing.assert_allclose(twin.joint_state('client').positions, q0, atol=1e-12)


def test_joint_trajectory_is_followed_to_its_last_point(serial_twin_config):
    twin = LabTwin(serial_twin_config)
    q0 = twin.joint_state('client').positions
    names = list(twin.joint_names('client'))
    mid, end = q0 + 0.02, q0 + np.array([0.05, -0.03, 0.04, 0.0, 0.0, 0.05])
    assert twin.command_trajectory('client', names[::-1], [(0.2, mid[::-1]), (0.4, end[::-1])])
    twin.step(round(0.104 / twin.dt))  # delay + half of the first segment: reference half-way to mid
    np.testing.assert_allclose(twin._robots['client'].follower.sample(twin.time), (q0 + mid) / 2, atol=1e-9)
    twin.step(2000)
    np.testing.assert_allclose(twin.joint_state('client').positions, end, atol=1e-6)


def test_hexapod_platform_follows_the_commanded_leg_lengths():
    twin = LabTwin(facility_config('hexapod'))
    kin = HexapodKinematics(hexapod_spec(name='client'))
    target = kin.home_pose * pin.exp6(pin.Motion(np.array([0.03, -0.02, 0.04, 0.05, -0.04, 0.1])))
    twin.command_positions('client', kin.leg_lengths(target))
    twin.step(1500)
    legs = twin.joint_state('client').positions
    np.testing.assert_allclose(legs, kin.leg_lengths(target), atol=1e-6)
    # the closed chain is soft only within the equality-constraint tolerance
    assert np.linalg.norm(pose_error(twin.flange_pose('client'), target)[:3]) < 2e-4
    assert np.linalg.norm(pose_error(twin.flange_pose('client'), kin.forward(legs))) < 5e-4


def test_ft_sensor_at_rest_reads_the_payload_weight():
    twin = LabTwin(facility_config('serial', ft=quiet()))
    twin.step(50)
    wrench = twin.wrench_source('client_ft')()[0]
    mass = 4.0 + 1.5 + 4 * 0.05  # client mock-up: box, ring, struts (hil_lab_twin.mjcf.client_mockup)
    rotation = twin.site_pose_in_world('client_ft_site').rotation
    np.testing.assert_allclose(wrench[:3], rotation.T @ np.array([0.0, 0.0, -9.81 * mass]), atol=1e-6)


def test_pressed_mockup_reads_the_press_force_at_the_sensor():
    noise = FtConfig(noise_force_std=0.05, noise_torque_std=0.003, seed=11)
    config = TwinConfig(robots=facility_config('serial', ft=noise).robots, press=PressConfig('client'))
    twin = LabTwin(config)
    source = twin.wrench_source('client_ft')
    twin.step(100)
    before = np.mean([twin.step() or source()[0] for _ in range(200)], axis=0)
    force = 40.0
    twin.set_press_force(force)
    twin.step(1500)  # contact, robot deflection and servo integral settle
    after = np.mean([twin.step() or source()[0] for _ in range(200)], axis=0)
    # independent reference: the press's actuator force (plus its weight along the slide axis)
    # acting at the contact point on the pusher axis, moved to the sensor frame
    press = twin.site_pose_in_world('press_tip_site')
    axis = press.rotation[:, 2]
    push_world = (force + 0.5 * float(np.dot([0, 0, -9.81], axis))) * axis
    sensor = twin.site_pose_in_world('client_ft_site')
    r = sensor.rotation.T @ (press.translation - sensor.translation)
    f_sensor = sensor.rotation.T @ push_world
    expected = np.concatenate([f_sensor, np.cross(r, f_sensor)])
    tol = np.array([3 * 0.05 / math.sqrt(200) + 0.02] * 3 + [3 * 0.003 / math.sqrt(200) + 0.005] * 3)
    assert np.all(np.abs((after - before) - expected) < tol), (after - before, expected)


def test_ft_noise_bias_and_sample_rate():
    cfg = FtConfig(rate_hz=250.0, noise_force_std=0.2, noise_torque_std=0.01, bias=(1.0, -2.0, 0.5, 0.1, 0.0, -0.1),
                   seed=5)
    twin = LabTwin(facility_config('serial', ft=cfg))
    source = twin.wrench_source('client_ft')
    twin.step(41)
    samples, sequences = [], {source()[2]}
    for _ in range(4000):
        twin.step()
        wrench, stamp, seq = source()
        if seq not in sequences:
            sequences.add(seq)
            samples.append(wrench - twin.wrench_true('client_ft'))
    assert len(samples) == 1000  # samples at t = 0.044 ... 4.040 s (250 Hz): a new sample every 4 steps, held in between
    errors = np.array(samples)
    np.testing.assert_allclose(errors.mean(axis=0), cfg.bias, atol=4 * 0.2 / math.sqrt(1000))
    np.testing.assert_allclose(errors.std(axis=0), [0.2] * 3 + [0.01] * 3, rtol=0.1)


def test_a_reading_is_the_mean_of_the_steps_of_its_sample_period():
    """The anti-aliasing of :class:`hil_lab_twin.ft.FtChannel`: at 1 kHz with 0.25 ms steps, a wrench that
    alternates from step to step (what a servoed arm's joint accelerations do to MuJoCo's force sensor)
    reads as its mean, not as the value of every fourth step."""
    from hil_lab_twin.ft import FtChannel

    channel = FtChannel('ft', FtConfig(rate_hz=1000.0, noise_force_std=0.0, noise_torque_std=0.0))
    readings = []
    for k in range(0, 41):
        wrench = np.full(6, 1.0 + (0.3 if k % 2 else -0.3) + 0.001 * k)
        if channel.sample(k * 0.00025, wrench):
            readings.append(channel.read()[0])
    # each reading: the mean of its four steps (the first one: its own step at t = 0)
    assert len(readings) == 11 and readings[0] == pytest.approx(0.7)
    for i, value in enumerate(readings[1:], start=1):
        steps = range(4 * i - 3, 4 * i + 1)
        assert value == pytest.approx(np.mean([1.0 + (0.3 if k % 2 else -0.3) + 0.001 * k for k in steps]), abs=1e-12)


def test_a_channel_takes_one_sample_per_period_on_mujocos_accumulated_time():
    """MuJoCo adds its time step to ``time`` in floating point. At 0.25 ms steps and 1 kHz the sum drifts from
    k * 0.25 ms by more than 1e-12 s within 10 s: a channel that compared with that tolerance skipped the
    sample of 10.267 s and took two at 18.868 s, and the CISAS twin, waiting for each F/T sample to pass the
    driver before its /clock, stalled for its 10 s barrier timeout. With the physics step known the channel
    takes exactly one sample per period (the first period: its own step at t = 0 and the one at 1 ms)."""
    from hil_lab_twin.ft import FtChannel

    dt = 0.00025
    wrench = np.zeros(6)
    old = FtChannel('ft', FtConfig(rate_hz=1000.0, noise_force_std=0.0, noise_torque_std=0.0))
    new = FtChannel('ft', FtConfig(rate_hz=1000.0, noise_force_std=0.0, noise_torque_std=0.0), step_s=dt)
    t, per_period_old, per_period_new = 0.0, [], []
    for _ in range(20000):
        taken_old = taken_new = 0
        for _ in range(4):
            t += dt                                       # as mj_step does
            taken_old += old.sample(t, wrench)
            taken_new += new.sample(t, wrench)
        per_period_old.append(taken_old)
        per_period_new.append(taken_new)
    assert per_period_new[0] == 2 and set(per_period_new[1:]) == {1}
    assert per_period_old[10266] == 0 and per_period_old[18867] == 2        # the control: the skip and the double
    assert new.stamp == pytest.approx(20.0, abs=1e-9) and new.sequence == 20001


def test_pacer_follows_an_injected_wall_clock():
    twin = LabTwin(facility_config('serial'))
    now = [100.0]
    pacer = RealTimePacer(twin, clock=lambda: now[0], max_catch_up_steps=50)
    pacer.start()
    now[0] += 0.0104
    assert pacer.poll() == 10
    now[0] += 1.0  # a stall of 1 s: at most 50 steps of catch-up, the rest is slip
    assert pacer.poll() == 50 and pacer.overruns == 1
    now[0] += 0.005
    assert pacer.poll() == 5
    assert twin.time == pytest.approx(0.065)


def test_offscreen_render_writes_a_png(tmp_path):
    twin = LabTwin(facility_config('hexapod'))
    twin.step(10)
    path = tmp_path / 'twin.png'
    twin.render_png(path, width=160, height=120, camera='client_view')
    twin.close()
    data = path.read_bytes()
    assert data.startswith(b'\x89PNG\r\n\x1a\n')
    idat = data[data.index(b'IDAT') + 4:data.index(b'IEND') - 8]
    raw = zlib.decompress(idat)
    assert len(raw) == 120 * (1 + 160 * 3)
    pixels = np.frombuffer(raw, dtype=np.uint8).reshape(120, -1)[:, 1:]
    assert pixels.std() > 5  # a scene, not a blank frame


def test_ft_reading_reaches_the_real_rdt_driver_over_udp(read_ft_driver):
    from hil_lab_twin.rdt_bridge import rdt_server
    from hil_sensors.ft_driver import FtDriver, check_parameters

    twin = LabTwin(facility_config('serial', ft=quiet()))
    twin.step(20)
    expected = twin.wrench_source('client_ft')()[0]
    server = rdt_server(twin, 'client_ft')
    driver = FtDriver(check_parameters({'sensor_port': server.port, 'sensor_rate_hz': 1000.0,
                                        'low_pass.enabled': False, 'software_bias.enabled': False}))
    try:
        assert read_ft_driver(driver, 20, 5.0) >= 20
    finally:
        server.stop()
    # RDT carries counts: 1e6 counts per N (N m) in the simulator's default calibration
    np.testing.assert_allclose(driver.newest.raw, expected, atol=1e-6)


def test_animated_png_has_all_frames_in_sequence():
    import struct

    from hil_lab_twin.png import encode_apng

    frames = [np.full((8, 10, 3), 40 * k, dtype=np.uint8) for k in range(4)]
    data = encode_apng(frames, fps=10)
    chunks, pos = [], 8
    while pos < len(data):
        length = struct.unpack('>I', data[pos:pos + 4])[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        assert struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + body)
        chunks.append((kind, body))
        pos += 12 + length
    kinds = [k for k, _ in chunks]
    assert kinds[:2] == [b'IHDR', b'acTL'] and kinds[-1] == b'IEND'
    assert struct.unpack('>II', chunks[1][1]) == (4, 0)  # 4 frames, loop forever
    sequence = [struct.unpack('>I', body[:4])[0] for kind, body in chunks if kind in (b'fcTL', b'fdAT')]
    assert sequence == list(range(7))  # fcTL, IDAT, (fcTL, fdAT) x 3
    rows = np.frombuffer(zlib.decompress(chunks[-2][1][4:]), dtype=np.uint8).reshape(8, 31)  # the last frame
    assert np.all(rows[:, 0] == 0) and np.all(rows[:, 1:] == 120)  # filter type 0, pixels 40 * 3


def test_pushing_the_mockup_at_its_grapple_reads_at_the_sensor():
    twin = LabTwin(facility_config('hexapod', ft=quiet()))
    twin.step(1500)  # the closed chain settles
    before = twin.wrench_source('client_ft')()[0]
    force = np.array([12.0, -5.0, 3.0])
    twin.push_payload('client', force)
    twin.step(1500)  # the table's servo settles under the load
    after = twin.wrench_source('client_ft')()[0]
    sensor = twin.site_pose_in_world('client_ft_site')
    grapple = twin.site_pose_in_world('client_grapple').translation
    f_sensor = sensor.rotation.T @ force
    r = sensor.rotation.T @ (grapple - sensor.translation)  # lever arm from the sensor origin
    np.testing.assert_allclose(after - before, np.concatenate([f_sensor, np.cross(r, f_sensor)]), atol=2e-3)
    with pytest.raises(ValueError):
        twin.push_payload('client', [np.nan, 0.0, 0.0])


def test_snapshot_renders_a_tracked_run(tmp_path):
    from hil_lab_twin.snapshot import run

    summary = run(tmp_path, hexapod=True, seconds=0.2, fps=20.0, width=64, height=48)
    assert summary['frames'] == 5 and not summary['faults']  # 50 commands of 4 ms, a frame every 12
    assert (tmp_path / 'lab_twin.png').read_bytes().startswith(b'\x89PNG')
    assert b'acTL' in (tmp_path / 'lab_twin.apng').read_bytes()
