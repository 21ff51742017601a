"""The pinch in the lab twin alone, with and without compliant mounts (hil_snare.lab.CompliantMount).

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
import pytest

from hil_common.errors import ConfigError
from hil_lab_twin.scene import FtConfig
from hil_lab_twin.twin import LabTwin
from hil_snare import lab
from hil_snare.runner import DEG, HtvCaptureConfig

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
