"""Seed 004 Eq. (12) from Pinocchio, in the seed's conventions (body twist of the base at its
CoM, linear first), checked against independent constructions."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics import se3
from hil_dynamics.servicer import ServicerModel

from servicer_scenarios import ARMS

RNG = np.random.default_rng(11)


@pytest.fixture(params=sorted(ARMS))
def servicer(request):
    urdf_fn, ee, _ = ARMS[request.param]
    return ServicerModel(urdf_fn(), ee)


def _random_state(n):
    return RNG.uniform(-2, 2, n), RNG.normal(0, 0.3, 6), RNG.normal(0, 0.3, n)


def test_free_flyer_velocity_is_the_body_twist_at_the_base_com(servicer):
    """g(t+h) = g exp6(h V) (seed 004 Eq. 1) for Pinocchio's free-flyer velocity V, and the
    linear part is the velocity of the base CoM in base axes."""
    model = servicer.model
    assert np.linalg.norm(model.inertias[1].lever) < 1e-12      # root frame at the base CoM
    q_arm, twist, dq = _random_state(servicer.n)
    pose = se3.pose(pin.rpy.rpyToMatrix(0.4, -1.1, 2.0), [3.0, -1.0, 0.5])
    q = servicer.configuration(pose, q_arm)
    v = np.concatenate((twist, dq))
    h = 1e-3
    q_next = pin.integrate(model, q, v * h)
    pose_next = pin.XYZQUATToSE3(q_next[:7])
    expected = pose * pin.exp6(pin.Motion(twist * h))
    np.testing.assert_allclose(pose_next.homogeneous, expected.homogeneous, atol=1e-14)
    # Finite difference of the CoM position of the root body.
    data = model.createData()
    com = lambda qq: pin.XYZQUATToSE3(qq[:7]).act(model.inertias[1].lever)  # noqa: E731
    eps = 1e-6
    v_com_orbit = (com(pin.integrate(model, q, v * eps)) - com(pin.integrate(model, q, -v * eps))) / (2 * eps)
    np.testing.assert_allclose(pose.rotation.T @ v_com_orbit, twist[:3], atol=1e-9)
    # Pinocchio reports the same twist for the root joint frame.
    pin.forwardKinematics(model, data, q, v)
    np.testing.assert_allclose(data.v[1].vector, twist, atol=1e-15)


def test_momentum_blocks_equal_the_sum_of_body_momenta(servicer):
    """[M_b M_bq] [V_b; dq] is the total momentum in base coordinates: sum over bodies of
    X_i^* (I_i v_i), built body by body without CRBA."""
    model = servicer.model
    data = model.createData()
    q_arm, twist, dq = _random_state(servicer.n)
    terms = servicer.terms(q_arm, twist, dq)
    q = servicer.configuration(pin.SE3.Identity(), q_arm)
    v = np.concatenate((twist, dq))
    pin.forwardKinematics(model, data, q, v)
    total = pin.Force.Zero()
    for i in range(1, model.njoints):
        total += data.oMi[i].act(model.inertias[i] * data.v[i])   # base frame = world at identity
    np.testing.assert_allclose(np.hstack((terms.M_b, terms.M_bq)) @ v, total.vector, rtol=1e-12, atol=1e-9)
    # M_b is the locked (composite) inertia of the whole servicer at the base CoM frame.
    composite = pin.Inertia.Zero()
    for i in range(1, model.njoints):
        composite += data.oMi[i].act(model.inertias[i])
    np.testing.assert_allclose(terms.M_b, composite.matrix(), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(terms.M_q, terms.mass_matrix[6:, 6:])
    np.testing.assert_allclose(terms.mass_matrix, terms.mass_matrix.T)


def test_coriolis_blocks_factorise_the_nonlinear_effects_with_skew_property(servicer):
    q_arm, twist, dq = _random_state(servicer.n)
    terms = servicer.terms(q_arm, twist, dq)
    v = np.concatenate((twist, dq))
    c = terms.coriolis_matrix
    rows_b = terms.C_b @ twist + terms.C_bq @ dq
    rows_q = terms.C_qb @ twist + terms.C_q @ dq
    np.testing.assert_allclose(np.concatenate((rows_b, rows_q)), servicer.coriolis_force(q_arm, twist, dq), atol=1e-10)
    # M_dot - 2C is skew-symmetric; M_dot by central differences along the motion.
    eps = 1e-6
    m_dot = (servicer.mass_matrix(q_arm + eps * dq) - servicer.mass_matrix(q_arm - eps * dq)) / (2 * eps)
    skew = m_dot - 2 * c
    np.testing.assert_allclose(skew + skew.T, 0.0, atol=1e-6 * np.abs(c).max() + 1e-9)
    # Rigid-body check of the base block: with the arm at rest, C_b V_b is V_b x* (M_b V_b).
    c_rest = servicer.coriolis_force(q_arm, twist, np.zeros(servicer.n))[:6]
    np.testing.assert_allclose(c_rest, se3.coadjoint_cross(twist, terms.M_b @ twist), atol=1e-9)


def test_jacobians_map_to_the_ee_body_twist_and_wrench(servicer):
    model = servicer.model
    data = model.createData()
    q_arm, twist, dq = _random_state(servicer.n)
    terms = servicer.terms(q_arm, twist, dq)
    q = servicer.configuration(se3.pose(pin.rpy.rpyToMatrix(0.3, 0.2, -0.5), [1, 2, 3]), q_arm)
    v = np.concatenate((twist, dq))
    pin.forwardKinematics(model, data, q, v)
    ee_twist = pin.getFrameVelocity(model, data, servicer.ee_frame_id, pin.LOCAL).vector
    np.testing.assert_allclose(terms.J_b @ twist + terms.J_m @ dq, ee_twist, atol=1e-12)
    # J^T F_e is the generalised force of a wrench on the EE (RNEA with an external force).
    wrench = RNG.normal(0, 5, 6)
    frame = model.frames[servicer.ee_frame_id]
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    fext[frame.parentJoint] = frame.placement.act(pin.Force(wrench))
    tau_ext = -pin.rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv), fext)
    np.testing.assert_allclose(servicer.generalized_force(terms.jacobian_ee, np.zeros(6), np.zeros(servicer.n), wrench),
                               tau_ext, atol=1e-10)


def test_terms_do_not_depend_on_the_base_pose(servicer):
    """Left invariance: evaluating at the identity base pose is exact."""
    model = servicer.model
    data = model.createData()
    q_arm, twist, dq = _random_state(servicer.n)
    terms = servicer.terms(q_arm, twist, dq)
    q = servicer.configuration(se3.pose(pin.rpy.rpyToMatrix(1.0, -0.4, 2.5), [10, -3, 7]), q_arm)
    v = np.concatenate((twist, dq))
    np.testing.assert_allclose(pin.crba(model, data, q), terms.mass_matrix, atol=1e-9)
    np.testing.assert_allclose(pin.computeCoriolisMatrix(model, data, q, v), terms.coriolis_matrix, atol=1e-9)


def test_bad_models_are_rejected():
    urdf_fn, ee, _ = ARMS['lbr']
    with pytest.raises(ValueError, match='ee_frame'):
        ServicerModel(urdf_fn(), 'no_such_frame')
    from hil_dynamics.models import lbr_iiwa14_urdf
    with pytest.raises(ValueError, match='base CoM'):
        ServicerModel(lbr_iiwa14_urdf(), 'lbr_flange')    # root frame is not at the CoM of link_0


def test_tool_pose_and_jacobian_against_a_finite_difference_of_the_tool_pose(servicer):
    """``ServicerModel.tool_pose_and_jacobian``: the tool pose moves, to first order, by
    ``exp6(h J_tool [V_b; dq])`` (body twist) when base and joints move by ``h [V_b; dq]``."""
    q_arm, twist, dq = _random_state(servicer.n)
    pose_tool_in_flange = se3.pose(pin.rpy.rpyToMatrix(0.2, 0.5, -0.3), [0.05, -0.02, 0.15])
    pose_tool, jac_tool = servicer.tool_pose_and_jacobian(q_arm, pose_tool_in_flange)
    pose_flange, jac_flange = servicer.frame_pose_and_jacobian(q_arm, servicer.ee_frame)
    np.testing.assert_allclose(jac_flange, servicer.ee_jacobian(q_arm), atol=1e-14)
    h = 1e-6
    pose_tool_next = pin.exp6(pin.Motion(twist * h)) * servicer.tool_pose_and_jacobian(q_arm + h * dq,
                                                                                          pose_tool_in_flange)[0]
    np.testing.assert_allclose(pin.log6(pose_tool.actInv(pose_tool_next)).vector / h,
                               jac_tool @ np.concatenate((twist, dq)), atol=1e-5)
    np.testing.assert_allclose((pose_flange * pose_tool_in_flange).homogeneous, pose_tool.homogeneous, atol=1e-14)


def test_the_compiled_ee_kinematics_are_pinocchios(servicer):
    """``ee_pose_array_and_jacobian`` and ``ee_jacobian`` (one compiled call, ``kernels.frame_pose_and_jacobian``)
    against Pinocchio's ``forwardKinematics``/``updateFramePlacement``/``computeFrameJacobian``
    (``frame_pose_and_jacobian``) at random joint angles, to 1e-12; a list is taken, a wrong length refused."""
    assert servicer._ee_kin is not None                      # the compiled path is the one tested
    for _ in range(20):
        q_arm = RNG.uniform(-3, 3, servicer.n)
        pose_ref, jac_ref = servicer.frame_pose_and_jacobian(q_arm)
        pose, jac = servicer.ee_pose_array_and_jacobian(q_arm)
        np.testing.assert_allclose(pose[:9].reshape(3, 3), pose_ref.rotation, atol=1e-12)
        np.testing.assert_allclose(pose[9:], pose_ref.translation, atol=1e-12)
        np.testing.assert_allclose(jac, jac_ref, atol=1e-12)
        np.testing.assert_array_equal(servicer.ee_jacobian(list(q_arm)), jac)
        np.testing.assert_array_equal(servicer.ee_jacobian(np.repeat(q_arm, 2)[::2]), jac)     # a strided view
    from hil_dynamics import kernels
    assert len(kernels.frame_pose_and_jacobian.signatures) == 1      # lists and views took the one compiled version
    with pytest.raises(ValueError, match=f'{servicer.n} values'):
        servicer.ee_jacobian(np.zeros(servicer.n + 1))
