"""Shared test helpers of hil_lab_twin."""

import socket
import time

import pytest

from hil_common.ros_testing import test_node


@pytest.fixture
def ros():
    """A test node and its executor in a private rclpy context."""
    with test_node('test_hil_lab_twin') as pair:
        yield pair


@pytest.fixture
def free_udp_port():
    """A UDP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _read_ft_driver(driver, records: int, timeout_s: float, idle=None) -> int:
    """Open an :class:`hil_sensors.ft_driver.FtDriver`, stream until ``records`` more were accepted,
    close it; returns how many were accepted."""
    start = driver.counters['accepted']
    try:
        driver.open()
        driver.start_streaming()
        deadline = time.monotonic() + timeout_s
        while driver.counters['accepted'] - start < records and time.monotonic() < deadline:
            driver.poll(0.05)
            if idle is not None:
                idle()
    finally:
        driver.close()
    return driver.counters['accepted'] - start


@pytest.fixture
def read_ft_driver():
    return _read_ft_driver
