"""The compiled fast paths of the rule steps against their readable references (issue 17).

Each fast path (``hil_dynamics.kernels``) must give the reference's result to 1e-12 on
random states: poses far from identity, large twists and wrenches, step sizes from 0.1 ms
to 0.1 s (the exponential's series and closed-form branches).
"""

import copy

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import kernels
from hil_dynamics.client import ClientAdmittance, ClientState
from hil_dynamics.rigid_body import RigidBody

TOL = 1e-12


def _random_pose(rng):
    return pin.SE3(pin.exp3(rng.normal(0.0, 1.5, 3)), rng.normal(0.0, 3.0, 3))


def _pose_diff(a: pin.SE3, b: pin.SE3) -> float:
    return float(np.abs(a.homogeneous - b.homogeneous).max())


def test_exp6_kernel_matches_pinocchio_on_both_branches():
    rng = np.random.default_rng(3)
    worst = 0.0
    for scale in (1e-9, 1e-5, 3e-3, 9.9e-3, 1.01e-2, 0.3, 2.0, 3.1):
        for _ in range(20):
            g = _random_pose(rng)
            w = rng.normal(size=3)
            u = np.concatenate((rng.normal(0.0, 1.0, 3), scale * w / np.linalg.norm(w)))
            out = np.empty(12)
            kernels._mul_exp(kernels.pose_array(g), u, out)
            worst = max(worst, _pose_diff(kernels.array_pose(out), g * pin.exp6(pin.Motion(u))))
    assert worst < TOL


def test_client_compiled_step_matches_reference_step():
    rng = np.random.default_rng(1)
    body = RigidBody(8000.0, [17000.0, 124000.0, 129000.0])
    worst = 0.0
    for _ in range(40):
        state = ClientState(0.0, _random_pose(rng), rng.normal(0.0, 0.2, 6), _random_pose(rng), rng.normal(0.0, 0.2, 6))
        fast, ref = ClientAdmittance(body, state.twist_nominal_body), ClientAdmittance(body, state.twist_nominal_body)
        fast.state, ref.state = state, copy.deepcopy(state)
        wrench, dt = rng.normal(0.0, 300.0, 6), 10.0 ** rng.uniform(-4.0, -1.0)
        for _ in range(3):
            a, b = fast.step(wrench, dt), ref.step_reference(wrench, dt)
        worst = max(worst, _pose_diff(a.pose_client_in_nominal, b.pose_client_in_nominal),
                    _pose_diff(a.pose_nominal_in_orbit, b.pose_nominal_in_orbit),
                    np.abs(a.twist_client_rel_body - b.twist_client_rel_body).max(),
                    np.abs(a.twist_nominal_body - b.twist_nominal_body).max())
        assert a.t == pytest.approx(b.t, abs=1e-15)
    assert worst < TOL


def test_client_compiled_step_follows_a_state_set_from_outside():
    """Re-basing (or any writer of ``rule.state``) is honoured by the compiled step."""
    rng = np.random.default_rng(2)
    body = RigidBody(1200.0, [800.0, 900.0, 1400.0])
    rule = ClientAdmittance(body, rng.normal(0.0, 0.1, 6))
    for _ in range(5):
        rule.step(np.ones(6), 1e-3)
    new = ClientState(0.005, _random_pose(rng), rng.normal(0.0, 0.1, 6), _random_pose(rng), rng.normal(0.0, 0.1, 6))
    rule.state = new
    ref = ClientAdmittance(body, new.twist_nominal_body)
    ref.state = copy.deepcopy(new)
    a, b = rule.step(np.ones(6), 1e-3), ref.step_reference(np.ones(6), 1e-3)
    assert _pose_diff(a.pose_client_in_nominal, b.pose_client_in_nominal) < TOL
    assert np.abs(a.twist_client_rel_body - b.twist_client_rel_body).max() < TOL


def test_client_compiled_step_refuses_a_non_finite_wrench_and_keeps_the_state():
    rule = ClientAdmittance(RigidBody(10.0, [1.0, 1.0, 1.0]), np.zeros(6))
    before = rule.state
    with pytest.raises(ValueError, match='wrench must be finite'):
        rule.step(np.array([0.0, np.nan, 0.0, 0.0, 0.0, 0.0]), 1e-3)
    assert rule.state is before
