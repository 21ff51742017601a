"""Inverse/forward kinematics of the motion tables (plain Python, Pinocchio; no rclpy).

Both kinematics classes offer the same interface to :class:`~hil_motion_table.table.MotionTable`:

* ``joint_names``, ``q_min``/``q_max``/``qd_max``/``qdd_max`` arrays;
* ``forward(q) -> pose_flange_in_base`` (``pin.SE3``);
* ``inverse(pose_flange_in_base, q_seed) -> IkResult``.

Poses follow ``hil_dynamics.se3``: ``pose_flange_in_base`` maps flange coordinates to base
coordinates; pose errors are body twists ``log6(g_a^-1 g_b)`` (linear first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from hil_motion_table.robot_models import HexapodSpec, SerialRobotSpec, urdf_from_spec
from hil_common.errors import InputError


@dataclass
class IkResult:
    """Outcome of one inverse-kinematics solve.

    ``q``: joint vector (leg lengths for the hexapod); ``converged``: residual below
    tolerance; ``error``: final body-twist residual norm; ``sigma_min``: smallest singular
    value of the 6xn task Jacobian at ``q`` (the singularity measure); ``iterations``.
    """

    q: np.ndarray
    converged: bool
    error: float
    sigma_min: float
    iterations: int


def pose_error(pose_a: pin.SE3, pose_b: pin.SE3) -> np.ndarray:
    """Body-twist error ``log6(a^-1 b)`` (linear first), zero iff the poses are equal."""
    return pin.log6(pose_a.actInv(pose_b)).vector


class SerialKinematics:
    """Damped-least-squares IK of a serial robot on its URDF, with Pinocchio.

    Iteration (Nakamura & Hanafusa 1986; Chiaverini's singular-value-dependent damping):
    with ``e = log6(g(q)^-1 g_d)`` and the flange's body Jacobian ``J``,
    ``dq = J^T (J J^T + lambda^2 I)^-1 e`` and ``q <- q + dq``. ``J`` stands for ``e``'s own
    Jacobian ``Jlog6(e) J``, which differs from it by ``O(|e|)``: the iteration still converges
    quadratically near the solution (one iteration per streamed command from an extrapolated seed,
    :class:`~hil_motion_table.table.MotionTable`), and needs no ``Jlog6``. ``lambda`` is
    ``damping`` far from singularities and grows to ``damping_max`` as the smallest
    singular value falls below ``singular_band``. ``sigma_min`` of the body Jacobian at
    the solution is reported so the caller can refuse near-singular configurations.

    :meth:`inverse` runs it compiled (:mod:`hil_motion_table.ik_kernel`, one call; for a chain of
    1-DOF revolute/prismatic joints); :meth:`inverse_reference` is the readable definition (and
    the path for any other model); ``test_ik_kernel`` checks that they agree to 1e-12.
    """

    HINT_RADIUS_RAD = 0.05

    def __init__(self, spec: SerialRobotSpec, damping: float = 1e-4, damping_max: float = 0.05,
                 singular_band: float = 0.05, tolerance: float = 1e-10, max_iterations: int = 50,
                 max_step: float = 0.5):
        self.spec = spec
        self.model = pin.buildModelFromXML(urdf_from_spec(spec))
        self.data = self.model.createData()
        self.frame_id = self.model.getFrameId(f'{spec.name}_flange')
        self.joint_names = tuple(spec.joint_names)
        self.q_min = np.array(spec.q_min)
        self.q_max = np.array(spec.q_max)
        self.qd_max = np.array(spec.qd_max)
        self.qdd_max = np.array(spec.qdd_max)
        self.q_home = np.array(spec.q_home)
        self.damping, self.damping_max, self.singular_band = damping, damping_max, singular_band
        self.tolerance, self.max_iterations, self.max_step = tolerance, max_iterations, max_step
        self._sigma_hint: tuple[float, np.ndarray] | None = None
        from hil_motion_table.ik_kernel import SerialChain

        self._chain = SerialChain.of(self.model, self.frame_id)
        if self._chain is not None:          # load the compiled IK now, not in the first real-time command
            self.inverse(self.forward(self.q_home), self.q_home)
            self._sigma_hint = None

    @property
    def dof(self) -> int:
        return self.model.nq

    def forward(self, q, initial_guess: pin.SE3 | None = None) -> pin.SE3:
        """``pose_flange_in_base`` at ``q`` (``initial_guess`` is unused; same signature as the hexapod)."""
        pin.framesForwardKinematics(self.model, self.data, np.asarray(q, dtype=float))
        return pin.SE3(self.data.oMf[self.frame_id])

    def jacobian_body(self, q) -> np.ndarray:
        """6xn body (flange-frame) Jacobian, linear rows first."""
        return pin.computeFrameJacobian(self.model, self.data, np.asarray(q, dtype=float), self.frame_id, pin.LOCAL)

    def sigma_min(self, q) -> float:
        return float(np.linalg.svd(self.jacobian_body(q), compute_uv=False)[-1])

    def inverse(self, pose_flange_in_base: pin.SE3, q_seed) -> IkResult:
        """The IK from ``q_seed`` (compiled, see the class docstring)."""
        chain = self._chain
        if chain is None:
            return self.inverse_reference(pose_flange_in_base, q_seed)
        from hil_motion_table.ik_kernel import serial_ik

        q = np.array(q_seed, dtype=float)
        target = chain.target
        target[:9] = pose_flange_in_base.rotation.reshape(9)
        target[9:] = pose_flange_in_base.translation
        hint = self._sigma_hint
        if hint is None:
            hint_sigma = -1.0
        else:
            hint_sigma = hint[0]
            chain.hint_q[:] = hint[1]
        serial_ik(chain.placements, chain.kind, chain.axis, chain.frame_placement, chain.poses, chain.jac, target, q,
                  self.tolerance, self.max_iterations, self.max_step, self.damping, self.damping_max,
                  self.singular_band, hint_sigma, chain.hint_q, self.HINT_RADIUS_RAD, chain.result)
        err_norm, sigma, it = chain.result
        self._sigma_hint = (sigma, q)
        return IkResult(q=q, converged=err_norm < self.tolerance * 1e3, error=err_norm, sigma_min=sigma,
                        iterations=int(it))

    def inverse_reference(self, pose_flange_in_base: pin.SE3, q_seed) -> IkResult:
        """The readable IK iteration (the class docstring), with Pinocchio."""
        q = np.array(q_seed, dtype=float)
        err_norm, sigma, it = np.inf, 0.0, 0
        # The smallest singular value (an SVD, the costliest step of an iteration) is always
        # computed at the solution, for the result. For the damping of the iterations before
        # it, the value at the previous call's solution stands in when the seed is within
        # HINT_RADIUS of it and far from the singular band (streaming: one small step per call).
        hint = self._sigma_hint
        trusted = (hint is not None and hint[0] >= 2.0 * self.singular_band
                   and float(np.max(np.abs(q - hint[1]))) < self.HINT_RADIUS_RAD)
        for it in range(self.max_iterations + 1):
            # one forward pass for both the flange's pose and its Jacobian
            pin.computeJointJacobians(self.model, self.data, q)
            current_to_target = pin.updateFramePlacement(self.model, self.data, self.frame_id).actInv(pose_flange_in_base)
            err = pin.log6(current_to_target).vector
            err_norm = float(np.linalg.norm(err))
            jac = pin.getFrameJacobian(self.model, self.data, self.frame_id, pin.LOCAL)
            done = err_norm < self.tolerance or it == self.max_iterations
            if done or not trusted:
                sigma = float(np.linalg.svd(jac, compute_uv=False)[-1])
            else:
                sigma = hint[0]
            if done:
                break
            lam2 = self.damping ** 2
            if sigma < self.singular_band:
                lam2 += (1.0 - (sigma / self.singular_band) ** 2) * self.damping_max ** 2
            dq = jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(6), err)
            step = float(np.max(np.abs(dq)))
            if step > self.max_step:
                dq *= self.max_step / step
            q = q + dq
        self._sigma_hint = (sigma, q)
        return IkResult(q=q, converged=err_norm < self.tolerance * 1e3, error=err_norm, sigma_min=sigma,
                        iterations=it)


class HexapodKinematics:
    """Closed-form IK and iterative FK of a 6-6 Stewart platform (seed 001's HEXA table).

    IK: ``l_i = ||p + R p_i - b_i||`` for ``pose_platform_in_base = (R, p)``.
    Leg-rate Jacobian for the platform's body twist ``V = [v; w]``:
    ``l_dot_i = (R^T n_i) . v + (p_i x R^T n_i) . w`` with ``n_i`` the unit leg vector.
    FK: Newton iteration ``g <- g exp6(J^-1 (l - l(g)))``, quadratic near the solution.
    The "joints" of the hexapod are its six leg lengths.
    """

    def __init__(self, spec: HexapodSpec, tolerance: float = 1e-12, max_iterations: int = 30):
        self.spec = spec
        self.joint_names = tuple(spec.joint_names)
        self.base_points = spec.base_points_in_base
        self.platform_points = spec.platform_points_in_platform
        self.q_min = np.full(6, spec.leg_min)
        self.q_max = np.full(6, spec.leg_max)
        self.qd_max = np.full(6, spec.leg_speed_max)
        self.qdd_max = np.full(6, spec.leg_acc_max)
        self.home_pose = pin.SE3(np.eye(3), np.array([0.0, 0.0, spec.home_height]))
        self.q_home = self.leg_lengths(self.home_pose)
        self.tolerance, self.max_iterations = tolerance, max_iterations

    @property
    def dof(self) -> int:
        return 6

    def leg_vectors(self, pose_platform_in_base: pin.SE3) -> np.ndarray:
        """Rows ``p + R p_i - b_i`` (base frame)."""
        g = pose_platform_in_base
        return g.translation + self.platform_points @ g.rotation.T - self.base_points

    def leg_lengths(self, pose_platform_in_base: pin.SE3) -> np.ndarray:
        legs = self.leg_vectors(pose_platform_in_base)
        return np.sqrt((legs * legs).sum(axis=1))

    def jacobian_body(self, pose_platform_in_base: pin.SE3) -> np.ndarray:
        """6x6 ``d l / d V`` for the platform body twist ``V`` (linear first)."""
        legs = self.leg_vectors(pose_platform_in_base)
        u = (legs / np.sqrt((legs * legs).sum(axis=1))[:, None]) @ pose_platform_in_base.rotation
        p = self.platform_points
        p_cross_u = np.column_stack([p[:, 1] * u[:, 2] - p[:, 2] * u[:, 1], p[:, 2] * u[:, 0] - p[:, 0] * u[:, 2],
                                     p[:, 0] * u[:, 1] - p[:, 1] * u[:, 0]])
        return np.hstack([u, p_cross_u])

    def sigma_min_at_pose(self, pose_platform_in_base: pin.SE3) -> float:
        return float(np.linalg.svd(self.jacobian_body(pose_platform_in_base), compute_uv=False)[-1])

    def forward(self, q, initial_guess: pin.SE3 | None = None) -> pin.SE3:
        """Platform pose from leg lengths by Newton iteration (raises if it does not converge)."""
        lengths = np.asarray(q, dtype=float)
        g = pin.SE3(self.home_pose if initial_guess is None else initial_guess)
        for _ in range(self.max_iterations):
            residual = lengths - self.leg_lengths(g)
            if float(np.max(np.abs(residual))) < self.tolerance:
                return g
            g = g * pin.exp6(pin.Motion(np.linalg.solve(self.jacobian_body(g), residual)))
        residual = lengths - self.leg_lengths(g)
        if float(np.max(np.abs(residual))) < 1e3 * self.tolerance:
            return g
        raise InputError(f'hexapod forward kinematics did not converge (leg residual {np.max(np.abs(residual)):.3g} m)')

    def inverse(self, pose_platform_in_base: pin.SE3, q_seed=None) -> IkResult:
        lengths = self.leg_lengths(pose_platform_in_base)
        return IkResult(q=lengths, converged=True, error=0.0,
                        sigma_min=self.sigma_min_at_pose(pose_platform_in_base), iterations=0)
