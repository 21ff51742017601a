"""The CISAS facility in the MuJoCo lab twin (issue 13 item 3; plain Python, no rclpy).

The twin has the CISAS arm (:func:`hil_motion_table.robot_models.cisas_arm_spec`) with its F/T
sensor on the flange and a docking probe on the sensor, and the target's docking plate fixed in
the lab (:class:`hil_lab_twin.scene.ProbeConfig`, :class:`hil_lab_twin.scene.DockTargetConfig`).
The facility's compliance is physical there: the probe's rod slides on a spring-damper of the
scenario's lumped ``k_L = k_C + k_spr``, ``b_L = b_C`` (seed 003 Eqs. 16-18), so the sensor reads
``f_L = k_L x + b_L x'`` while the ball presses on the plate. MuJoCo computes the contact.

Geometry (the frames of :func:`hil_docking.graph.cisas_lab_nodes`): the arm's base axes are the
LVLH-aligned lab axes, the flange keeps the orientation of the arm's home, the sensor sits on the
flange with its axes, and the mock-up is at ``dr = p_flange - p_dock``. The probe points along
the docking axis ``n`` (chaser to target), and the plate's face is placed where the ball touches
it exactly when ``dr = 0``: the penetration of seed 003 is then ``x = dr . n``, as the emulated
facility has it (:class:`hil_docking.facility_rule.EmulatedRobot`). The arm starts at the
approach's start ``dr(0) = start_lvlh_m``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from hil_lab_twin.scene import SENSOR_HEIGHT_M     # the measuring frame above the flange

CHASER_NS = 'chaser'
CHASER_SENSOR = f'{CHASER_NS}_ft'


def cisas_twin_config(scenario, servo=None, ft=None, timestep_s: float = 0.00025):
    """The lab twin's :class:`hil_lab_twin.scene.TwinConfig` of the CISAS facility for a docking scenario.

    ``timestep_s`` 0.25 ms: the probe's stiff contact (``solref`` time constant 0.5 ms) needs two steps
    per time constant (MuJoCo's guidance)."""
    from hil_lab_twin.scene import DockTargetConfig, FtConfig, ProbeConfig, RobotConfig, ServoConfig, TwinConfig, reachable_ik
    from hil_motion_table.kinematics_helpers import make_kinematics

    kin = make_kinematics('cisas')
    rotation_home = kin.forward(kin.spec.q_home).rotation
    p_dock = np.asarray(scenario.dock_position_in_base_m, dtype=float)
    axis = np.asarray(scenario.docking_axis_lvlh, dtype=float)
    probe = ProbeConfig(axis_in_sensor=tuple(float(v) for v in rotation_home.T @ axis),
                        stiffness_n_m=float(scenario.facility.lumped.stiffness_n_m),
                        damping_ns_m=float(scenario.facility.lumped.damping_ns_m))
    tip_at_dock = p_dock + rotation_home @ np.array([0.0, 0.0, SENSOR_HEIGHT_M]) + probe.length_m * axis
    target = DockTargetConfig(face_xyz=tuple(float(v) for v in tip_at_dock + probe.tip_radius_m * axis),
                              face_normal=tuple(float(v) for v in -axis))
    start = pin.SE3(rotation_home, p_dock + np.asarray(scenario.start_lvlh_m, dtype=float))
    q0 = reachable_ik(kin, start, kin.spec.q_home, 'chaser')
    robot = RobotConfig(CHASER_NS, 'serial', 'cisas', 'probe', q_initial=tuple(float(v) for v in q0),
                        servo=servo or ServoConfig(), ft=ft or FtConfig(seed=31), probe=probe)
    return TwinConfig(robots=(robot,), timestep=timestep_s, dock_target=target)


def q_for_dr(dr_lvlh_m, scenario, seed=None) -> np.ndarray:
    """The arm's joints that put the mock-up at ``dr`` from the port with the home orientation (the
    motion table's IK)."""
    from hil_lab_twin.scene import reachable_ik
    from hil_motion_table.kinematics_helpers import make_kinematics

    kin = make_kinematics('cisas')
    rotation_home = kin.forward(kin.spec.q_home).rotation
    pose = pin.SE3(rotation_home, np.asarray(scenario.dock_position_in_base_m, dtype=float) + np.asarray(dr_lvlh_m, dtype=float))
    return reachable_ik(kin, pose, kin.spec.q_home if seed is None else seed, 'chaser')
