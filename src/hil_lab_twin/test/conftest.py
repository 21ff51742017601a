"""Shared test helpers of hil_lab_twin."""

import time

import pytest


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
