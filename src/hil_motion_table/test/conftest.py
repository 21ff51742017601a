"""Kinematics fixtures shared by this package's tests (built once per session)."""

import pytest

from hil_motion_table.kinematics import HexapodKinematics, SerialKinematics
from hil_motion_table.robot_models import hexapod_spec, ur10e_spec


@pytest.fixture(scope='session')
def ur10e():
    return SerialKinematics(ur10e_spec())


@pytest.fixture(scope='session')
def hexapod():
    return HexapodKinematics(hexapod_spec())
