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


def _sigma_min_float80(matrix):
    """The smallest singular value of a float64 matrix, computed in long double (x87 float80, eps 1.1e-19):
    cyclic one-sided Jacobi on its columns in the textbook form (Golub & Van Loan, Alg. 8.6.3's rotation),
    to the float80 roundoff. A reference for the error of the float64 values, not for speed."""
    w = np.array(matrix if matrix.shape[1] <= matrix.shape[0] else matrix.T, dtype=np.longdouble).T.copy()
    eps = np.finfo(np.longdouble).eps
    for _ in range(100):
        rotated = False
        for i in range(w.shape[0] - 1):
            for j in range(i + 1, w.shape[0]):
                a, b, c = w[i] @ w[i], w[j] @ w[j], w[i] @ w[j]
                if abs(c) > eps * np.sqrt(a * b):
                    rotated = True
                    zeta = (b - a) / (2 * c)
                    t = (1 if zeta >= 0 else -1) / (abs(zeta) + np.sqrt(1 + zeta * zeta))
                    cs = 1 / np.sqrt(1 + t * t)
                    w[i], w[j] = cs * w[i] - cs * t * w[j], cs * t * w[i] + cs * w[j]
        if not rotated:
            return float(np.sqrt(min(row @ row for row in w)))
    raise AssertionError('the float80 reference did not converge')


def _test_matrices():
    """Each robot's Jacobians at random joints and on the way into a singularity (one joint moved to where
    sigma_min is least along it, then sigma_min set to 0.1 ... 1e-8 and 0 by its slope there), and matrices with
    chosen singular values: repeated, graded, zero, and other shapes (6x4, 6x7: the other branch)."""
    rng = np.random.default_rng(17)
    out = []
    for robot in ROBOTS:
        kin = SerialKinematics(SERIAL_ROBOTS[robot]())
        for _ in range(10):
            out.append(kin.jacobian_body(random_q(kin, rng)))
        for joint in (4, 2, 1):
            for _ in range(2):
                q = random_q(kin, rng)
                along = np.eye(kin.dof)[joint]
                sigma = lambda s: np.linalg.svd(kin.jacobian_body(q + s * along), compute_uv=False)[-1]  # noqa: E731
                grid = np.linspace(-np.pi, np.pi, 361)
                s_lo = grid[int(np.argmin([sigma(s) for s in grid]))]
                lo, hi = s_lo - 2 * np.pi / 360, s_lo + 2 * np.pi / 360
                for _ in range(80):                                       # golden section
                    m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
                    lo, hi = (lo, m2) if sigma(m1) < sigma(m2) else (m1, hi)
                s_star = 0.5 * (lo + hi)
                if sigma(s_star) > 1e-7:
                    continue                                              # no singularity on this line
                slope = (sigma(s_star + 1e-3) - sigma(s_star)) / 1e-3
                for level in (0.1, 0.05, 0.02, 1e-3, 1e-5, 1e-8, 0.0):
                    out.append(kin.jacobian_body(q + (s_star + level / slope) * along))
    for values in ([3.0, 2.0, 1.0, 0.5, 0.2, 0.05], [2.0, 2.0, 2.0, 1.0, 1.0, 1.0], [1.0] * 6,
                   [3.0, 1.0, 1e-3, 1e-6, 1e-9, 1e-12], [2.5, 1.5, 1.0, 0.3, 0.3 + 1e-14, 0.3 - 1e-14],
                   [3.0, 2.0, 1.0, 0.5, 0.2, 0.0], [3.0, 2.0, 0.0, 0.0, 0.0, 0.0]):
        u, _ = np.linalg.qr(rng.normal(size=(6, 6)))
        v, _ = np.linalg.qr(rng.normal(size=(6, 6)))
        out.append(u @ np.diag(values) @ v.T)
    out.append(np.zeros((6, 6)))
    jac = out[0].copy()
    jac[:, 3] = jac[:, 1]                                                 # two equal columns
    out.append(jac)
    out += [rng.normal(size=(6, 4)), rng.normal(size=(6, 7)), rng.normal(size=(6, 1))]
    return [np.ascontiguousarray(m, dtype=float) for m in out]


def test_the_smallest_singular_value_is_lapacks():
    """``smallest_singular_value`` (one-sided Jacobi, what the compiled IK reports as sigma_min) against NumPy's
    LAPACK SVD, which the readable IK calls, and a float80 reference. Both float64 methods are backward stable:
    each errs by a few ``eps sigma_max`` absolute (about 1e-15 here), whatever sigma_min is. So the bound is
    absolute, ``4 eps sigma_max`` (measured: 5e-16 for LAPACK, 3e-16 for Jacobi, ``sigma_max`` up to 3.1);
    above 1e-4 it is also 1e-10 relative, the tolerance the IK's users need (the 0.05 band and 0.02 floor).
    ``sqrt(eigvalsh(J J^T)[0])`` would fail it: 3e-12 absolute in the band and 3e-8 at a singularity."""
    from hil_motion_table.ik_kernel import smallest_singular_value

    eps = np.finfo(float).eps
    matrices = _test_matrices()
    assert len(matrices) > 150
    work = np.empty((6, 7))
    for jac in matrices:
        values = np.linalg.svd(jac, compute_uv=False)
        lapack, sigma_max = values[-1], values[0]
        exact = _sigma_min_float80(jac)
        fast = smallest_singular_value(jac, work)
        bound = 4.0 * eps * max(sigma_max, 1e-300)
        assert abs(fast - lapack) <= bound, (fast, lapack, sigma_max)
        assert abs(fast - exact) <= 2.0 * eps * sigma_max, (fast, exact, sigma_max)
        if lapack >= 1e-4:
            assert fast == pytest.approx(lapack, rel=1e-10, abs=0.0)
    assert smallest_singular_value(np.zeros((6, 6)), work) == 0.0
    bad = matrices[0].copy()
    for value in (np.nan, np.inf):
        bad[2, 3] = value
        with pytest.raises(np.linalg.LinAlgError):                   # as numpy.linalg.svd in Numba
            smallest_singular_value(bad, work)
