"""The compiled IK (:mod:`hil_motion_table.ik_kernel`) against Pinocchio and the readable reference.

Each piece against Pinocchio on random states of every serial table robot (forward kinematics, the
flange's LOCAL Jacobian, ``log6``), and the whole solve against
:meth:`SerialKinematics.inverse_reference` to 1e-12: streaming (a small step from the last
solution, with the singular-value hint) and from far seeds (several iterations, no hint).
"""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.kernels import pose_array
from hil_motion_table.ik_kernel import forward_into, jacobian_into, log6_into
from hil_motion_table.kinematics import SerialKinematics
from hil_motion_table.robot_models import SERIAL_ROBOTS

ROBOTS = sorted(SERIAL_ROBOTS)


def random_q(kin, rng):
    return kin.q_min + (kin.q_max - kin.q_min) * rng.uniform(0.1, 0.9, kin.dof)


@pytest.mark.parametrize('robot', ROBOTS)
def test_forward_kinematics_and_the_flange_jacobian_are_pinocchios(robot):
    kin = SerialKinematics(SERIAL_ROBOTS[robot]())
    chain = kin._chain
    assert chain is not None
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = random_q(kin, rng)
        forward_into(chain.placements, chain.kind, chain.axis, chain.frame_placement, q, chain.poses)
        np.testing.assert_allclose(chain.poses[chain.n], pose_array(kin.forward(q)), rtol=0, atol=1e-13)
        jacobian_into(chain.kind, chain.axis, chain.poses, chain.n, chain.jac)
        np.testing.assert_allclose(chain.jac, kin.jacobian_body(q), rtol=0, atol=1e-13)


def test_log6_is_pinocchios_and_inverts_exp6():
    rng = np.random.default_rng(5)
    angles = [0.0, 1e-12, 1e-8, 1e-5, 9.99e-4, 1.001e-3, 0.1, 1.0, 2.0, 3.0, np.pi - 1.001e-3, np.pi - 9.99e-4,
              np.pi - 1e-6, np.pi]
    out = np.empty(6)
    for angle in angles:
        for _ in range(5):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            g = pin.exp6(pin.Motion(np.r_[rng.normal(size=3), angle * axis]))
            log6_into(pose_array(g), out)
            # the round trip holds everywhere; Pinocchio's own value where log is unique (angle < pi)
            back = pin.exp6(pin.Motion(out))
            np.testing.assert_allclose(back.homogeneous, g.homogeneous, rtol=0, atol=1e-9 if angle > 3.1 else 1e-12)
            if angle < 3.1:
                np.testing.assert_allclose(out, pin.log6(g).vector, rtol=0, atol=1e-12)


@pytest.mark.parametrize('robot', ROBOTS)
def test_the_compiled_solve_is_the_reference_solve(robot):
    fast, reference = SerialKinematics(SERIAL_ROBOTS[robot]()), SerialKinematics(SERIAL_ROBOTS[robot]())
    rng = np.random.default_rng(3)
    q = random_q(fast, rng)
    iterations = []
    # streaming: a stream of poses along a smooth path, each solve seeded from the last (the hint on)
    for k in range(50):
        dq = 0.002 * np.sin(0.1 * k + np.arange(fast.dof))
        target = fast.forward(q + dq)
        a, b = fast.inverse(target, q), reference.inverse_reference(target, q)
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
        assert a.iterations == b.iterations and a.converged and b.converged
        assert a.error == pytest.approx(b.error, abs=1e-13) and a.sigma_min == pytest.approx(b.sigma_min, abs=1e-12)
        iterations.append(a.iterations)
        q = a.q
    # far seeds: several iterations, no trusted hint
    for _ in range(10):
        start = random_q(fast, rng)
        target = fast.forward(start + rng.uniform(-0.3, 0.3, fast.dof))
        fast._sigma_hint = reference._sigma_hint = None
        a, b = fast.inverse(target, start), reference.inverse_reference(target, start)
        assert a.iterations == b.iterations and a.iterations > 2
        np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
        assert a.converged == b.converged
        assert a.sigma_min == pytest.approx(b.sigma_min, abs=1e-12)
