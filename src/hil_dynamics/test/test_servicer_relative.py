"""Seed 004 §III-B/C, issue items 1 and 4: the relative servicer simulation (admittance Eq. 18,
torque law Eq. 22, a simulated real arm on the moving base in gravity, mapping Eq. 23)
reproduces the absolute free-floating dynamics of Eq. (12) integrated independently
(Pinocchio ABA in the orbit frame, ``reference_servicer.py``)."""

import functools

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import se3
from hil_dynamics.client import relative_mapping
from hil_dynamics.servicer import delta_twist, servicer_initial_state
from hil_dynamics.servicer_lockstep import build_servicer_loop

from reference_servicer import AbsoluteServicer
from servicer_scenarios import (CLIENT, POSE_BASE_IN_CLIENT_0, POSE_CLIENT_IN_ORBIT_0, POSE_NOMINAL_IN_LAB,
                                TWIST_CLIENT_BODY_0, scenario)


def _run(arm, duration_s, dt, **switches):
    sc = scenario(arm)
    loop = build_servicer_loop(sc.urdf, sc.ee_frame, CLIENT, TWIST_CLIENT_BODY_0, sc.initial.pose_base_in_nominal,
                               sc.initial.twist_base_rel_body, sc.q0, sc.dq0, pose_nominal_in_orbit_0=POSE_CLIENT_IN_ORBIT_0,
                               pose_nominal_in_lab=POSE_NOMINAL_IN_LAB, **switches)
    ref = AbsoluteServicer(sc.urdf, sc.ee_frame, sc.pose_base_in_orbit_0, sc.initial.twist_base_body, sc.q0, sc.dq0)
    steps = int(round(duration_s / dt))
    q_travel = 0.0
    for _ in range(steps):
        loop.step(dt, sc.wrench_base_com, sc.tau, sc.wrench_ee)
        ref.step(dt, sc.wrench_base_com, sc.tau, sc.wrench_ee)
        q_travel = max(q_travel, float(np.abs(loop.q_arm - sc.q0).max()))
    pose_b, twist_b = loop.absolute()
    return {
        'pose': float(np.linalg.norm(se3.log6(ref.pose_base_in_orbit.actInv(pose_b)))),
        'q': float(np.abs(loop.q_arm - ref.q_arm).max()),
        'twist': float(np.abs(twist_b - ref.twist_base_body).max()),
        'dq': float(np.abs(loop.dq_arm - ref.dq_arm).max()),
        'q_travel': q_travel,
        'base_travel': float(np.linalg.norm(ref.pose_base_in_orbit.translation - sc.pose_base_in_orbit_0.translation)),
        'base_turn': float(np.linalg.norm(pin.log3(sc.pose_base_in_orbit_0.rotation.T @ ref.pose_base_in_orbit.rotation))),
        'g_s': loop.admittance.state.pose_base_in_nominal,
    }


@pytest.mark.parametrize('arm', ['lbr', 'ssrms'])
def test_relative_equals_absolute_over_60s_at_1khz(arm):
    err = _run(arm, 60.0, 1e-3)
    # The scenario is not trivial: the arm moves, the base drifts and turns, the lab robot moves.
    assert err['q_travel'] > 0.2
    assert err['base_travel'] > 1.0 and err['base_turn'] > 0.5
    assert np.linalg.norm(err['g_s'].translation - POSE_BASE_IN_CLIENT_0.translation) > 0.1
    assert err['pose'] <= 1e-6, err
    assert err['q'] <= 1e-6, err
    assert err['twist'] <= 1e-6 and err['dq'] <= 1e-6, err


@functools.lru_cache(maxsize=None)
def _run_all_terms(arm, duration_s, dt):
    return _run(arm, duration_s, dt)


@pytest.mark.parametrize('switch', ['use_ff1', 'use_ff2', 'use_ff3', 'use_gravity'])
def test_dropping_one_torque_term_breaks_the_relative_simulation(switch):
    good = _run_all_terms('lbr', 10.0, 1e-2)
    bad = _run('lbr', 10.0, 1e-2, **{switch: False})
    assert good['q'] < 1e-8 and good['pose'] < 1e-8
    assert bad['q'] > 1e-4, bad


def test_initial_conditions_co_moving_base_starts_the_lab_robot_at_rest():
    g_t0, v_t0 = POSE_CLIENT_IN_ORBIT_0, TWIST_CLIENT_BODY_0
    g_b0 = g_t0 * POSE_BASE_IN_CLIENT_0
    init = servicer_initial_state(g_t0, v_t0, g_b0)
    # g_s(0) = g_n(0)^-1 g_b(0) with g_n(0) = g_t(0).
    np.testing.assert_allclose(init.pose_base_in_nominal.homogeneous, POSE_BASE_IN_CLIENT_0.homogeneous, atol=1e-12)
    # V_b(0) = Ad_{g_bt} V_t(0): every point of the base moves with the client's velocity field.
    point_in_base = np.array([0.3, -0.7, 1.1])
    v_point_orbit_b = g_b0.rotation @ (init.twist_base_body[:3] + np.cross(init.twist_base_body[3:], point_in_base))
    point_in_client = POSE_BASE_IN_CLIENT_0.act(point_in_base)
    v_point_orbit_t = g_t0.rotation @ (v_t0[:3] + np.cross(v_t0[3:], point_in_client))
    np.testing.assert_allclose(v_point_orbit_b, v_point_orbit_t, atol=1e-14)
    np.testing.assert_allclose(g_b0.rotation @ init.twist_base_body[3:], g_t0.rotation @ v_t0[3:], atol=1e-15)
    # V_s(0) = V_b(0) - Ad_{g_s^-1} V_t(0) = 0 and Eq. (23) maps back to V_b(0).
    np.testing.assert_allclose(init.twist_base_rel_body, 0.0, atol=1e-15)
    pose_b, twist_b = relative_mapping(g_t0, v_t0, init.pose_base_in_nominal, init.twist_base_rel_body)
    np.testing.assert_allclose(pose_b.homogeneous, g_b0.homogeneous, atol=1e-12)
    np.testing.assert_allclose(twist_b, init.twist_base_body, atol=1e-15)


def test_initial_conditions_with_an_own_base_twist():
    g_t0, v_t0 = POSE_CLIENT_IN_ORBIT_0, TWIST_CLIENT_BODY_0
    g_b0 = g_t0 * POSE_BASE_IN_CLIENT_0
    v_b0 = np.array([0.05, 0.0, -0.01, 0.0, 0.02, 0.0])
    init = servicer_initial_state(g_t0, v_t0, g_b0, v_b0)
    np.testing.assert_allclose(init.twist_base_body, v_b0)
    np.testing.assert_allclose(init.twist_base_rel_body, v_b0 - delta_twist(init.pose_base_in_nominal, v_t0), atol=1e-15)
    assert np.abs(init.twist_base_rel_body).max() > 1e-3
    with pytest.raises(ValueError, match='twist_base_body_0'):
        servicer_initial_state(g_t0, v_t0, g_b0, [0.0, np.nan, 0, 0, 0, 0])
    with pytest.raises(ValueError, match='twist_client_body_0'):
        servicer_initial_state(g_t0, v_t0[:5], g_b0)
