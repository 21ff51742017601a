"""Packaging of hil_docking: what colcon and launch_ros rely on (see hil_common.packaging_check)."""

from pathlib import Path

from hil_common.packaging_check import check_ament_python_package


def test_hil_docking_is_a_consistent_ament_python_package():
    facts = check_ament_python_package(Path(__file__).resolve().parents[1])
    assert facts['name'] == 'hil_docking'
