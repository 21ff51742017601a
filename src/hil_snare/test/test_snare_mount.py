"""The compliant mounts (hil_snare.mount): the carriage law, the pinch in the lab twin alone with and without
them, and case 3 in the lockstep runner with the same mounts.

Both robots hold their start (Table 3's relative pose, the GF 12.8 mm off the LEE axis) and the
snare drive closes the wires onto the GF (seed 000 Table 3's tightening, the drive stalling at
500 N). The ring starts at 172 deg, just before the wires reach the shaft (176 deg), to keep the
test short. With the wires fixed to the mock-ups the position-controlled robots impose the
relative position at the pinch and the exponential wire law (seed 000 Eq. 10) diverges; with a
compliant mount on each side (the wire ring's carriage in the LEE, the GF shaft on its mock-up)
the pinch settles: the drive stalls at 500 N, the GF centred in the wire triangle, the mounts
carrying the offset, and the LEE's F/T sensor measuring what its mount passes on.
"""

import math

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from hil_common.errors import ConfigError
from hil_lab_twin.scene import FtConfig
from hil_lab_twin.twin import LabTwin
from hil_common.params import ParameterError, validate
from hil_snare import lab, mount, snare_twin_node
from hil_snare.runner import DEG, HtvCaptureConfig, build_htv_capture, capture_outcome, run

START_DEG = 172.0


def _pinch(duration_s, lee_mount=None, gf_mount=None, diverged_n=5e3):
    """Run the twin alone; returns ``(twin, wires, times, forces)`` (stops early once diverged)."""
    cfg = HtvCaptureConfig()
    quiet = FtConfig(noise_force_std=0.0, noise_torque_std=0.0)
    twin = LabTwin(lab.snare_twin_config(cfg, lee_ft=quiet, gf_ft=quiet))
    wires = lab.SnareWires(cfg, lee_mount=lee_mount, gf_mount=gf_mount)
    wires.theta = START_DEG * DEG
    wires.start_drive()
    snare = lab.SnareLab(twin, wires)
    times, forces = [], []
    for _ in range(int(round(duration_s / twin.dt))):
        snare.step()
        times.append(twin.time)
        forces.append(wires.normal_force_n.copy())
        if wires.normal_force_n.max() > diverged_n or twin.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number:
            break
    return twin, wires, np.array(times), np.array(forces)


def test_the_pinch_diverges_with_the_wires_fixed_to_the_position_controlled_mock_ups():
    twin, wires, t, f = _pinch(2.0)
    assert f.max() > 5e3 or twin.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number, f.max()


def test_with_compliant_mounts_the_pinch_settles():
    mount = lab.CompliantMount()
    twin, wires, t, f = _pinch(3.5, lee_mount=mount, gf_mount=mount)
    assert twin.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    assert f.max() < 400.0, f.max()                            # no wire above 400 N, ever
    late = t > t[-1] - 0.5
    total = f[late].sum(axis=1)
    assert np.all(np.abs(total - 500.0) < 10.0), total         # the drive stalled at 500 N ...
    assert np.ptp(f[late], axis=0).max() < 5.0                 # ... and the pinch is still
    assert math.degrees(wires.theta) < 185.0
    # the GF in the wire triangle (both where their carriages are), near its centre
    p, in_shaft = wires.section(twin)
    assert in_shaft and np.hypot(p[1], p[2]) < 5e-3, p
    # the mounts carry the offset the robots hold (12.8 mm), and nothing moves
    lee, gf = wires.carriages
    assert lee.offset_m[1] > 3e-3 and gf.offset_m[1] < -3e-3
    assert np.linalg.norm(lee.v) < 5e-4 and np.linalg.norm(gf.v) < 5e-4, (lee.v, gf.v)
    # the LEE's F/T sensor measures the mount's spring force (less the bare tool's weight)
    body = mujoco.mj_name2id(twin.model, mujoco.mjtObj.mjOBJ_BODY, 'servicer_payload')
    r = twin.site_pose_in_world('servicer_ft_site').rotation
    measured = twin.wrench_true('servicer_ft')[:3] - r.T @ [0.0, 0.0, -9.81 * twin.model.body_mass[body]]
    spring = mount.stiffness_n_per_m * lee.offset_m                 # on the LEE, LEE frame
    spring_in_sensor = lab.pose_sensor_in_lee().rotation.T @ spring
    assert np.allclose(measured, spring_in_sensor, rtol=0.02, atol=0.5), (measured, spring_in_sensor)


@pytest.mark.parametrize('field, value', [('stiffness_n_per_m', 0.0), ('mass_kg', -1.0), ('damping_ratio', float('nan')),
                                          ('substeps', 0)])
def test_bad_mount_parameters_are_refused_naming_them(field, value):
    with pytest.raises(ConfigError, match=field):
        lab.CompliantMount(**{field: value})


@pytest.mark.parametrize('zeta', [1.0, 0.2])
def test_a_carriage_is_the_spring_damper_of_its_closed_form(zeta):
    """A carriage released 2 mm off its rest point on a body at rest, no wires: ``x(t)`` of the damped
    oscillator (critical: ``x0 (1 + w t) e^{-w t}``; underdamped: ``x0 e^{-zeta w t} (cos w_d t + zeta w / w_d
    sin w_d t)``), to 0.5 % of ``x0`` with 10 us substeps; then a held force settles it at ``F / K`` (critical)."""
    m = mount.CompliantMount(stiffness_n_per_m=40e3, mass_kg=4.0, damping_ratio=zeta)
    c = mount.Carriage(m, (0.3, 0.0, 0.0))
    body = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), np.array([1.0, 2.0, 3.0]))
    p_rest, v_rest = c.rest(body, np.zeros(6))
    x0 = 2e-3
    c.p, c.v = p_rest + body.rotation @ [0.0, x0, 0.0], np.zeros(3)
    w = math.sqrt(m.stiffness_n_per_m / m.mass_kg)
    wd = w * math.sqrt(1.0 - zeta ** 2)
    h, worst = 1e-5, 0.0
    for k in range(1, 3001):                 # 30 ms, ~3 periods of the 16 Hz mount
        c.substep(h, body.rotation, np.zeros(6), p_rest, v_rest)
        t = k * h
        ref = x0 * ((1 + w * t) * math.exp(-w * t) if zeta == 1.0 else
                    math.exp(-zeta * w * t) * (math.cos(wd * t) + zeta * w / wd * math.sin(wd * t)))
        worst = max(worst, abs((body.rotation.T @ (c.p - p_rest))[1] - ref))
    assert worst < 5e-3 * x0, worst
    if zeta < 1.0:
        return
    f = np.array([0.0, 0.0, 120.0])          # held on the carriage, in the body's axes
    for _ in range(20000):
        c.substep(h, body.rotation, np.concatenate([f, np.zeros(3)]), p_rest, v_rest)
    assert np.allclose(body.rotation.T @ (c.p - p_rest), f / m.stiffness_n_per_m, atol=1e-7)


def test_the_twin_and_the_lockstep_runner_step_the_one_mount_law():
    """The twin's wires (GF frame: the client sensor) and the lockstep runner's (GF frame: the HTV's CoM)
    step the same mounts to the same wrenches: the GF at Table 3's pose moving, the ring at 178.3 deg
    (two wires on the shaft), 20 steps of 1 ms; the LEE wrenches equal, the GF ones the same wrench moved
    between the two frames, the ring rates equal."""
    cfg = HtvCaptureConfig(lee_mount=mount.CompliantMount(), gf_mount=mount.CompliantMount(stiffness_n_per_m=20e3))
    wires = lab.SnareWires(cfg, lee_mount=cfg.lee_mount, gf_mount=cfg.gf_mount)
    snare_system = build_htv_capture(cfg)[0]
    for mounted in (wires.mounts, snare_system.mounts):
        assert type(mounted) is mount.MountedWires
        assert [c.mount for c in mounted.carriages] == [cfg.lee_mount, cfg.gf_mount]
    assert lab.CompliantMount is mount.CompliantMount
    sensor_in_htv = lab.pose_sensor_in_htv()
    pose_lee = pin.SE3(pin.rpy.rpyToMatrix(0.2, -0.1, 0.4), np.array([0.5, -1.0, 2.0]))
    pose_htv = pose_lee * lab.pose_gf_in_lee(cfg) * lab.htv()[2].inverse()
    pose_gs = pose_htv * sensor_in_htv
    twist_lee = np.array([0.01, 0.0, -0.02, 0.0, 0.01, 0.0])
    twist_htv = np.array([0.02, -0.01, 0.005, 0.001, -0.002, 0.0])
    twist_gs = sensor_in_htv.actInv(pin.Motion(twist_htv)).vector
    theta = 178.3 * DEG                    # two wires on the shaft, ~70 N
    loaded = 0.0
    for _ in range(20):
        w_lee_t, w_gs, rate_t = wires.mounts.step(1e-3, theta, (pose_lee, pose_gs), (twist_lee, twist_gs))
        w_lee_l, w_htv, rate_l = snare_system.mounts.step(1e-3, theta, (pose_lee, pose_htv), (twist_lee, twist_htv))
        loaded = max(loaded, wires.mounts.normal_force_n.sum())
        assert np.allclose(w_lee_t, w_lee_l, rtol=1e-9, atol=1e-9), (w_lee_t, w_lee_l)
        assert np.allclose(sensor_in_htv.act(pin.Force(w_gs)).vector, w_htv, rtol=1e-9, atol=1e-9)
        assert rate_t == pytest.approx(rate_l, rel=1e-12, abs=1e-15)
        assert np.allclose(wires.mounts.normal_force_n, snare_system.mounts.normal_force_n, rtol=1e-9, atol=1e-9)
    assert loaded > 10.0, loaded                 # the wires pressed on the shaft
    for a, b in zip(wires.mounts.carriages, snare_system.mounts.carriages):
        assert np.allclose(a.p, b.p, atol=1e-12) and np.linalg.norm(a.offset_m) > 1e-5


@pytest.mark.parametrize('name, value', [('mount_stiffness_n_per_m', 10.0), ('mount_mass_kg', 0.0),
                                         ('mount_damping_ratio', -0.1), ('compliant_mounts', 'yes')])
def test_bad_twin_node_mount_parameters_are_refused_naming_them(name, value):
    with pytest.raises(ParameterError, match=name):
        validate(snare_twin_node.PARAMS, {name: value})


def test_case_3_in_lockstep_with_the_mounts_captures_as_without():
    """Seed 000 case 3 (Table 3), the lockstep runner with the twin's default mounts on both sides (4 ms, 7 s):
    the first contact as without mounts (2.60 s), softer (peak before 3 s 49 N against 100 N), the pinch
    closing at the 500 N stall with the GF on the LEE axis, still; the same verdict as without mounts."""
    results = {}
    for name, m in (('rigid', None), ('mounts', mount.CompliantMount())):
        cfg = HtvCaptureConfig(lee_mount=m, gf_mount=m, dt_s=4e-3, duration_s=7.0)
        snare_system, ctrl, poses, x = build_htv_capture(cfg)
        trace, poses, x = run(snare_system, ctrl, poses, x, cfg.duration_s, cfg.dt_s, cfg.control_period_s)
        a = trace.arrays()
        results[name] = (a['t'], a['normal_force_n'], a['rel_position_m'], capture_outcome(snare_system, trace), x)
    (t, f_r, _, out_r, _), (_, f_m, p_m, out_m, x_m) = results['rigid'], results['mounts']
    assert out_r.captured and out_m.captured, (out_r, out_m)
    first = [t[np.argmax(f.sum(axis=1) > 0.0)] for f in (f_r, f_m)]
    assert abs(first[0] - first[1]) <= 0.01 and 2.5 < first[1] < 2.7, first
    before = t <= 3.0
    assert f_m[before].max() < 0.6 * f_r[before].max(), (f_m[before].max(), f_r[before].max())
    late = t >= 6.0
    assert np.all(np.abs(f_m[late].sum(axis=1) - 500.0) < 5.0) and f_m.max() < 300.0, f_m.max()
    assert np.hypot(p_m[late, 1], p_m[late, 2]).max() < 0.2e-3
    assert abs(math.degrees(x_m[-1]) - math.degrees(results['rigid'][4][-1])) < 0.1    # the ring stalls where it did
