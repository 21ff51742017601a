"""Kinematics fixtures shared by this package's tests (built once per session)."""

import pytest

from hil_common.ros_testing import test_node
from hil_motion_table.kinematics import HexapodKinematics, SerialKinematics
from hil_motion_table.robot_models import hexapod_spec, ur10e_spec


@pytest.fixture(scope='session')
def ur10e():
    return SerialKinematics(ur10e_spec())


@pytest.fixture(scope='session')
def hexapod():
    return HexapodKinematics(hexapod_spec())


@pytest.fixture
def ros():
    """A test node and its executor in a private rclpy context."""
    with test_node('test_hil_motion_table') as pair:
        yield pair
