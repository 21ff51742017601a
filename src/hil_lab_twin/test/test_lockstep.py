"""Motion tables in the twin in lockstep: a 6-D sinusoid tracked, delay compensation, determinism."""

import math

import numpy as np
import pytest

from hil_lab_twin.lockstep import TableInTheLoop, response_delay
from hil_lab_twin.scene import ServoConfig, facility_config
from hil_lab_twin.twin import LabTwin
from hil_motion_table.kinematics_helpers import home_pose, make_kinematics, sinusoid_pose
from hil_motion_table.table import MotionTable, TableLimits

AMPLITUDE = np.array([0.02, 0.015, 0.01, 0.03, 0.03, 0.04])
FREQUENCY = np.array([0.5, 0.4, 0.6, 0.5, 0.35, 0.45])


def run(kind, robot, output, horizon, duration=4.0, settle=1.0):
    servicer = robot == 'kr120r2500pro'  # the servicer robot, carrying the light-weight arm
    twin = LabTwin(facility_config(kind, with_servicer=servicer))
    kin = make_kinematics(robot)
    table = MotionTable(kin, TableLimits((-3.0,) * 3, (3.0,) * 3), period=0.004, prediction_horizon=horizon)
    loop = TableInTheLoop(twin, 'servicer' if servicer else 'client', table, output=output, period=0.004)
    center = home_pose(kin)
    for k in range(int(duration / 0.004)):
        pose, _ = sinusoid_pose(k * 0.004, center, -AMPLITUDE, FREQUENCY, phase=np.full(6, math.pi / 2),
                                offset=AMPLITUDE)
        loop.step(pose, record=k * 0.004 >= settle)
    return loop.summary(), twin.data.qpos.copy()


@pytest.mark.parametrize('kind, robot, output', [('serial', 'ur10e', 'forward_position'),
                                                 ('hexapod', 'hexapod', 'joint_trajectory'),
                                                 ('serial', 'kr120r2500pro', 'forward_position')])
def test_lockstep_tracking_with_and_without_delay_compensation(kind, robot, output):
    horizon = response_delay(ServoConfig())
    plain, _ = run(kind, robot, output, 0.0)
    compensated, _ = run(kind, robot, output, horizon)
    print(f"{robot}: without {1e3 * plain['rms_position_m']:.3f} mm / {1e3 * plain['rms_angle_rad']:.3f} mrad RMS, "
          f"with {1e3 * compensated['rms_position_m']:.3f} mm / {1e3 * compensated['rms_angle_rad']:.3f} mrad RMS")
    assert not plain['faults'] and not compensated['faults']
    # independent estimate of the uncompensated error: a pure lag tau of the stream gives
    # |e(t)| ~ tau |v(t)|; RMS of |v| of u = a (1 - cos 2 pi f t) is 2 pi |a f| / sqrt(2)
    v_rms = np.linalg.norm(2 * math.pi * AMPLITUDE[:3] * FREQUENCY[:3]) / math.sqrt(2)
    assert plain['rms_position_m'] == pytest.approx(horizon * v_rms, rel=0.35)
    assert compensated['rms_position_m'] < 0.25 * plain['rms_position_m']
    assert compensated['rms_angle_rad'] < 0.25 * plain['rms_angle_rad']


def test_lockstep_runs_are_bitwise_repeatable():
    a = run('hexapod', 'hexapod', 'joint_trajectory', 0.02, duration=0.6, settle=0.0)
    b = run('hexapod', 'hexapod', 'joint_trajectory', 0.02, duration=0.6, settle=0.0)
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])
