"""The lab-twin node built from one YAML parameter (``layout: config``), over rclpy/DDS and RDT/UDP.

This is how the graph starts the twin of a calibrated facility
(``hil_bringup.facility.twin_node_parameters``): the whole :class:`TwinConfig` -- here the
client table with the ring mock-up and the servicer robot with the ring gripper, at given
start joints -- as ``twin_config_yaml``. The node publishes those joints, serves the ring
mock-up's F/T sensor over RDT/UDP (its weight, read by the real driver), and takes the OBSW's
gripper command on ``servicer/gripper_cmd``.
"""

import dataclasses

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from hil_common.ros_testing import spin_until, start_node, stop_process
from hil_lab_twin.scene import (ArmConfig, FtConfig, RingGripperConfig, RingMockupConfig, TwinConfig, config_to_yaml,
                                facility_config)
from hil_sensors.ft_driver import FtDriver, check_parameters

Q_CLIENT = (0.1, -1.4, 1.5, -1.7, -1.5, 0.2)


def test_twin_node_from_a_config_yaml(ros, read_ft_driver, free_udp_port, tmp_path):
    node, executor = ros
    client, servicer = facility_config('serial', with_servicer=True).robots
    mockup = RingMockupConfig(pose_grasp_in_sensor_xyz_rpy=(0.0, 0.16, 0.27, 0.0, 1.5707963267948966, 0.0))
    quiet = FtConfig(noise_force_std=0.0, noise_torque_std=0.0)
    config = TwinConfig(robots=(dataclasses.replace(client, mockup=mockup, q_initial=Q_CLIENT, ft=quiet), servicer),
                        arm=ArmConfig(gripper=RingGripperConfig()))
    path = tmp_path / 'twin.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'layout': 'config', 'twin_config_yaml': config_to_yaml(config), 'publish_wrench': False,
        'rdt_ports': [f'client_ft:{free_udp_port}']}}}))
    proc = start_node('hil_lab_twin', 'lab_twin_node', ros_args=('--params-file', str(path)))
    states = {}
    for ns in ('client', 'servicer', 'servicer_arm'):
        node.create_subscription(JointState, f'/{ns}/joint_states', lambda m, ns=ns: states.__setitem__(ns, m), 10)
    pub_grip = node.create_publisher(Bool, '/servicer/gripper_cmd', 10)
    try:
        assert spin_until(executor, lambda: len(states) == 3 and pub_grip.get_subscription_count() > 0, 30.0)
        np.testing.assert_allclose(states['client'].position, Q_CLIENT, atol=2e-3)
        driver = FtDriver(check_parameters({'sensor_port': free_udp_port, 'sensor_rate_hz': 1000.0,
                                            'low_pass.enabled': False, 'software_bias.enabled': False}))
        assert read_ft_driver(driver, 50, 10.0, idle=lambda: executor.spin_once(timeout_sec=0.0)) >= 50
        # box, ring lip and struts of the ring mock-up
        assert np.linalg.norm(driver.newest.raw[:3]) == pytest.approx((4.0 + 1.5 + 0.2) * 9.81, rel=1e-3)
        pub_grip.publish(Bool(data=True))
        spin_until(executor, lambda: False, 1.0)
        assert proc.poll() is None
    finally:
        output = stop_process(proc)
    assert 'Traceback' not in output, output
