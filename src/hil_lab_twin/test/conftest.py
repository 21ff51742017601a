"""Shared test helpers of hil_lab_twin."""

import time

import pytest


def _read_ft_driver(driver, records: int, timeout_s: float, idle=None) -> int:
    """Open an :class:`hil_sensors.ft_driver.FtDriver`, stream until ``records`` were accepted, close it."""
    try:
        driver.open()
        driver.start_streaming()
        deadline = time.monotonic() + timeout_s
        while driver.counters['accepted'] < records and time.monotonic() < deadline:
            driver.poll(0.05)
            if idle is not None:
                idle()
    finally:
        driver.close()
    return driver.counters['accepted']


@pytest.fixture
def read_ft_driver():
    return _read_ft_driver
