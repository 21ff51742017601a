"""Re-basing the nominal (seed 004 Eqs. 4, 23): the pieces of hil_dynamics.rebase against closed forms."""

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.client import ClientAdmittance, relative_mapping
from hil_common.errors import InputError
from hil_dynamics.rebase import (NominalBody, PlannedRebase, RebasePlan, client_part, compound_inertia_and_momentum,
                                 free_motion, inertia_from_matrix, min_jerk, plan_rebase, rebase_relative)
from hil_dynamics.rigid_body import RigidBody

BODY = RigidBody(7828.0, [17023.0, 129112.0, 124826.0])


def test_inertia_from_a_spatial_matrix_round_trips():
    rng = np.random.default_rng(3)
    for _ in range(5):
        inertia = pin.Inertia(float(rng.uniform(1, 100)), rng.normal(size=3), np.diag(rng.uniform(1, 5, 3)))
        inertia = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(size=3)), np.zeros(3)).act(inertia)
        assert np.abs(inertia_from_matrix(inertia.matrix()).matrix() - inertia.matrix()).max() < 1e-12


def test_compound_of_two_bodies_matches_the_closed_form():
    """Two spheres on the x axis moving along y: mass, CoM, parallel-axis inertia and momentum."""
    m1, m2, r = 3.0, 1.0, 0.1
    s1 = pin.Inertia.FromSphere(m1, r)
    s2 = pin.Inertia.FromSphere(m2, r)
    p1, p2 = pin.SE3(np.eye(3), np.array([-1.0, 0, 0])), pin.SE3(np.eye(3), np.array([3.0, 0, 0]))
    v1, v2 = np.array([0, 2.0, 0, 0, 0, 0]), np.array([0, -1.0, 0, 0, 0, 0])
    inertia, momentum = compound_inertia_and_momentum([(p1, s1, s1.matrix() @ v1), (p2, s2, s2.matrix() @ v2)])
    assert inertia.mass == pytest.approx(4.0)
    assert inertia.lever == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)                 # (3 * -1 + 1 * 3) / 4
    i_sphere = 0.4 * r * r
    assert inertia.inertia[2, 2] == pytest.approx(m1 * (i_sphere + 1.0) + m2 * (i_sphere + 9.0))
    assert momentum[:3] == pytest.approx([0.0, 6.0 - 1.0, 0.0])
    assert momentum[5] == pytest.approx(-1.0 * 6.0 + 3.0 * -1.0)                      # sum of x p_y


def test_rebase_relative_keeps_the_absolute_state():
    rng = np.random.default_rng(7)
    for _ in range(20):
        g_n, g_rel, g_n_new = (pin.SE3.Random() for _ in range(3))
        v_n, v_rel, v_n_new = (rng.normal(size=6) for _ in range(3))
        g_rel_new, v_rel_new = rebase_relative(g_n, v_n, g_rel, v_rel, g_n_new, v_n_new)
        g_a, v_a = relative_mapping(g_n, v_n, g_rel, v_rel)
        g_b, v_b = relative_mapping(g_n_new, v_n_new, g_rel_new, v_rel_new)
        assert np.abs(g_a.homogeneous - g_b.homogeneous).max() < 1e-12
        assert np.abs(v_a - v_b).max() < 1e-12
        # Same nominal pose: the relative pose (the table's command) does not move.
        g_same, _ = rebase_relative(g_n, v_n, g_rel, v_rel, g_n, v_n_new)
        assert np.abs(g_same.homogeneous - g_rel.homogeneous).max() < 1e-12


def test_a_nominal_off_its_centre_of_mass_is_the_same_unforced_motion():
    """Re-base the client onto its own unforced motion seen from a frame 3 m off its CoM:
    ``g_c`` stays at that offset and ``V_c`` at zero for 100 s (Eq. 4 in any body-fixed frame)."""
    rule = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
    for _ in range(10):
        rule.step(np.zeros(6), 0.1)
    g_t, v_t = rule.absolute()
    offset = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5), np.array([3.0, -1.0, 0.5]))   # client CoM in the nominal
    g_n = g_t * offset.inverse()
    v_n = offset.act(pin.Motion(v_t)).vector
    nominal = NominalBody(offset.act(BODY.inertia))
    rule.rebase(g_n, v_n, nominal)
    assert np.abs(rule.state.twist_client_rel_body).max() < 1e-15
    for _ in range(1000):
        rule.step(np.zeros(6), 0.1)
    s = rule.state
    assert np.abs(s.pose_client_in_nominal.homogeneous - offset.homogeneous).max() < 1e-9
    assert np.abs(s.twist_client_rel_body).max() < 1e-11
    # The nominal's own momentum in orbit is conserved (unforced).
    h0 = g_n.act(pin.Force(nominal.mass_matrix @ v_n)).vector
    h1 = s.pose_nominal_in_orbit.act(pin.Force(nominal.mass_matrix @ s.twist_nominal_body)).vector
    assert np.abs(h1 - h0).max() < 1e-9 * np.abs(h0).max()


def test_min_jerk_blend_ends():
    assert min_jerk(0.0) == 0.0 and min_jerk(1.0) == 1.0 and min_jerk(0.5) == pytest.approx(0.5)
    eps = 1e-6
    assert min_jerk(eps) / eps < 1e-9 and (1.0 - min_jerk(1.0 - eps)) / eps < 1e-9


def test_servicer_rebase_keeps_the_base_state_and_both_steps_honour_the_new_nominal():
    """Eq. (23) for the base across ServicerAdmittance.rebase; then the fused and the reference step
    integrate the same (off-CoM) nominal to 1e-12 over 1 s."""
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.servicer import ServicerAdmittance, ServicerModel

    model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
    q = np.array([0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0])
    args = (model, BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003], None,
            pin.SE3(pin.rpy.rpyToMatrix(0.0, 1.57, 0.0), np.array([-4.8, -0.2, 1.1])), np.zeros(6))
    fused, reference = ServicerAdmittance(*args), ServicerAdmittance(*args)
    nominal = NominalBody(pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5])))
    g_n = fused.state.pose_nominal_in_orbit
    v_n = np.array([0.03, -0.005, 0.077, -0.0007, -0.0435, -0.003])
    before = fused.state.absolute()
    for adm in (fused, reference):
        adm.rebase(g_n, v_n, nominal)
    after = fused.state.absolute()
    assert np.abs(after[0].homogeneous - before[0].homogeneous).max() < 1e-12
    assert np.abs(after[1] - before[1]).max() < 1e-12
    assert fused.state.pose_base_in_nominal.isApprox(reference.state.pose_base_in_nominal, 1e-15)
    zero, f_b, f_e = np.zeros(7), np.array([5.0, 0, 0, 0, 1.0, 0]), np.array([0, 2.0, 0, 0, 0, 0.3])
    for _ in range(100):
        fused.step(0.01, q, zero, zero, f_b, f_e)
        reference.step_reference(0.01, q, zero, zero, f_b, f_e)
    a, b = fused.state, reference.state
    assert np.abs(a.pose_base_in_nominal.homogeneous - b.pose_base_in_nominal.homogeneous).max() < 1e-12
    assert np.abs(a.twist_nominal_body - b.twist_nominal_body).max() < 1e-12
    # ... and the nominal is the new body's unforced motion: its orbit momentum is kept.
    h0 = g_n.act(pin.Force(nominal.mass_matrix @ v_n)).vector
    h1 = a.pose_nominal_in_orbit.act(pin.Force(nominal.mass_matrix @ a.twist_nominal_body)).vector
    assert np.abs(h1 - h0).max() < 1e-9 * np.abs(h0).max()


def test_a_rebase_step_carries_what_another_process_needs():
    """The client node of a split graph applies the servicer node's increment: same absolute state."""
    from hil_dynamics.rebase import RebaseStep

    rule = ClientAdmittance(BODY, [0.0, 0.0, 0.0, 0.0, -0.0436, 0.0])
    rule.step(np.zeros(6), 0.1)
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    step = RebaseStep(0.1, 0.5, np.zeros(6), np.array([0.03, 0.0, 0.07, 0.0, -0.044, 0.0]), inertia.matrix())
    before = rule.absolute()
    rule.rebase(rule.state.pose_nominal_in_orbit, step.twist_nominal_body,
                NominalBody(inertia_from_matrix(step.nominal_mass_matrix)))
    after = rule.absolute()
    assert np.abs(after[1] - before[1]).max() < 1e-15
    assert np.abs(rule._nominal.mass_matrix - inertia.matrix()).max() < 1e-9


def test_a_plan_onto_the_client_alone_stops_the_relative_motion():
    """Plan onto the client's own rigid motion (its CoM 2 m off the nominal origin, its own velocity):
    after the ramp the client's relative twist ``V_c`` is zero and stays zero (the nominal moves with
    it), and the absolute state never changed (Eq. 23)."""
    rule = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
    for _ in range(5):
        rule.step(np.array([20.0, -10.0, 5.0, 30.0, 0.0, -40.0]), 0.1)     # off the nominal, moving relative to it
    s = rule.state
    g_t, v_t = rule.absolute()
    plan = plan_rebase(s.t, 2.0, [client_part(s.pose_client_in_nominal, BODY, v_t)])
    assert np.abs(plan.pose_com_in_nominal.translation - s.pose_client_in_nominal.translation).max() < 1e-12
    side, dt = PlannedRebase(plan, 0.01), 0.01
    t = s.t
    for _ in range(300):
        side.update(t, rule)
        rule.step(np.zeros(6), dt)
        t += dt
    assert side.done and side.late_s == 0.0
    assert np.abs(rule.state.twist_client_rel_body).max() < 1e-9
    # the free client's absolute motion, integrated alone, is what the re-based pair reproduces
    alone = ClientAdmittance(BODY, v_t, g_t)
    for _ in range(300):
        alone.step(np.zeros(6), dt)
    g_a, v_a = alone.absolute()
    g_b, v_b = rule.absolute()
    assert np.abs(g_a.homogeneous - g_b.homogeneous).max() < 1e-9 and np.abs(v_a - v_b).max() < 1e-9


def test_a_side_that_holds_through_the_ramp_keeps_the_other_sides_nominal():
    """Two copies of one rule get one plan; one steps, the other holds half the ramp
    (:meth:`PlannedRebase.advance_nominal`): their nominals agree to 1e-9 throughout."""
    def make():
        rule = ClientAdmittance(BODY, [0.0, 0.0, 0.0, 0.0, -0.0436, 0.0])
        rule.step(np.zeros(6), 0.1)
        return rule
    a, b = make(), make()
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    plan = plan_rebase(a.state.t, 1.0, [(pin.SE3.Identity(), inertia, inertia.matrix() @ [0.03, 0.0, 0.07, 0.0, -0.044, 0.0])])
    dt = 0.01
    side_a, side_b = PlannedRebase(plan, dt), PlannedRebase(plan, dt)
    t = a.state.t
    for k in range(150):
        side_a.update(t, a)
        a.step(np.zeros(6), dt)
        if k == 30:
            side_b.advance_nominal(b, t - 30 * dt, 31 * dt)      # b held the steps 0..30, then steps again
        elif k > 30:
            side_b.update(t, b)
            b.step(np.zeros(6), dt)
        t += dt
        if k >= 30:
            assert np.abs(a.state.pose_nominal_in_orbit.homogeneous - b.state.pose_nominal_in_orbit.homogeneous).max() < 1e-9
            assert np.abs(a.state.twist_nominal_body - b.state.twist_nominal_body).max() < 1e-9
    assert side_a.done and side_b.done


def test_free_motion_of_an_off_centre_nominal_keeps_its_orbit_momentum():
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    nominal, g0, v0 = NominalBody(inertia), pin.SE3.Identity(), np.array([0.03, 0.0, 0.07, 0.01, -0.044, 0.02])
    g1, v1 = free_motion(nominal, g0, v0, 50.0, 0.01)
    h0 = g0.act(pin.Force(nominal.mass_matrix @ v0)).vector
    h1 = g1.act(pin.Force(nominal.mass_matrix @ v1)).vector
    assert np.abs(h1 - h0).max() < 1e-9 * np.abs(h0).max()
    e0, e1 = (0.5 * v @ nominal.mass_matrix @ v for v in (v0, v1))
    assert e1 == pytest.approx(e0, rel=1e-9)


def test_a_plan_message_round_trips_and_bad_ones_are_refused():
    plan = plan_rebase(12.5, 10.0, [(pin.SE3.Identity(), BODY.inertia, BODY.mass_matrix @ [0.1, 0, 0, 0, 0, 0.01])])
    back = RebasePlan.from_list(plan.to_list())
    assert back.to_list() == plan.to_list() and len(plan.to_list()) == RebasePlan.LENGTH
    bad = plan.to_list()
    with pytest.raises(InputError, match='25 finite'):
        RebasePlan.from_list(bad[:-1])
    with pytest.raises(InputError, match='mass properties'):
        RebasePlan.from_list(bad[:2] + [-1.0] + bad[3:])
    with pytest.raises(InputError, match='25 finite'):
        RebasePlan.from_list(bad[:5] + [float('nan')] + bad[6:])
    with pytest.raises(InputError, match='unit quaternion'):
        RebasePlan.from_list(bad[:6] + [0.0, 0.0, 0.0, 2.0] + bad[10:])


def test_a_plan_made_ahead_of_its_start_is_the_one_made_at_the_start():
    """A plan made ``lead`` before its start (the live graph: it must reach the other node first) moves
    the compound and the nominal on over the lead: for a client alone (a rigid compound, its nominal
    its own unforced motion) it equals the plan made at the start from the state then."""
    rule = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
    for _ in range(5):
        rule.step(np.array([20.0, -10.0, 5.0, 30.0, 0.0, -40.0]), 0.1)
    s = rule.state
    ahead = plan_rebase(s.t + 1.0, 2.0, [client_part(s.pose_client_in_nominal, BODY, rule.absolute()[1])],
                        (1.0, 0.01, BODY, s.pose_nominal_in_orbit, s.twist_nominal_body))
    for _ in range(100):
        rule.step(np.zeros(6), 0.01)
    s = rule.state
    at_start = plan_rebase(s.t, 2.0, [client_part(s.pose_client_in_nominal, BODY, rule.absolute()[1])])
    # the compound's frame: a rotation of the plan made ahead (its axes were the nominal's a second earlier)
    g_ahead, g_now = ahead.pose_com_in_nominal, at_start.pose_com_in_nominal
    assert np.abs(g_ahead.translation - g_now.translation).max() < 1e-9
    v_ahead = g_ahead.act(pin.Motion(ahead.twist_com_body)).vector
    v_now = g_now.act(pin.Motion(at_start.twist_com_body)).vector
    assert np.abs(v_ahead - v_now).max() < 1e-9


def test_the_compiled_ramp_target_is_pinocchios_inertia_and_motion():
    """``kernels.compound_in_nominal`` against ``pin.SE3.actInv``, ``pin.Inertia.act`` (with ``numpy.linalg.inv``)
    and ``pin.SE3.act`` on a motion, on random poses and an Envisat-like compound."""
    from hil_dynamics import kernels

    rng = np.random.default_rng(11)
    inertia_com = np.diag([2.0e4, 1.4e5, 1.3e5])
    rot = pin.rpy.rpyToMatrix(0.3, -0.2, 0.5)
    inertia_com = rot @ inertia_com @ rot.T                  # not diagonal in the CoM frame's axes
    for _ in range(50):
        g_n, g_free = pin.SE3.Random(), pin.SE3.Random()
        g_free.translation = g_n.translation + rng.normal(0.0, 3.0, 3)
        v_free = rng.normal(0.0, 0.05, 6)
        com, v_target, m6, m6_inv = np.empty(12), np.empty(6), np.empty((6, 6)), np.empty((6, 6))
        kernels.compound_in_nominal(kernels.pose_array(g_n), kernels.pose_array(g_free), v_free, 9661.0,
                                    inertia_com.reshape(9).copy(), np.linalg.inv(inertia_com).reshape(9).copy(),
                                    com, v_target, m6, m6_inv)
        ref_com = g_n.actInv(g_free)
        ref_m6 = ref_com.act(pin.Inertia(9661.0, np.zeros(3), inertia_com)).matrix()
        assert np.abs(kernels.array_pose(com).homogeneous - ref_com.homogeneous).max() < 1e-12
        assert np.abs(v_target - ref_com.act(pin.Motion(v_free)).vector).max() < 1e-15
        assert np.abs(m6 - ref_m6).max() < 1e-12 * np.abs(ref_m6).max()
        ref_inv = np.linalg.inv(ref_m6)
        assert np.abs(m6_inv - ref_inv).max() < 1e-12 * np.abs(ref_inv).max()
        assert np.abs(m6 @ m6_inv - np.eye(6)).max() < 1e-12


@pytest.mark.parametrize('side', ['client', 'servicer'])
def test_the_ramp_on_arrays_is_the_readable_ramp(side):
    """:meth:`PlannedRebase.update` (the compiled target, ``rebase_nominal_twist``) against
    :meth:`PlannedRebase.update_reference` (``pin.Inertia``, ``rule.rebase``) on two copies of one rule stepped
    through a whole ramp: the nominal, the relative state, the nominal's mass matrices and each increment
    agree to 1e-12 (relative), and the absolute state is kept at every increment (Eq. 23)."""
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.servicer import ServicerAdmittance, ServicerModel

    if side == 'client':
        def make():
            rule = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
            for _ in range(5):
                rule.step(np.array([20.0, -10.0, 5.0, 30.0, 0.0, -40.0]), 0.01)
            return rule

        def step(rule):
            rule.step(np.array([2.0, 0.0, -1.0, 0.0, 3.0, 0.0]), 0.01)

        def rel(state):
            return state.pose_client_in_nominal, state.twist_client_rel_body

        def nominal_of(rule):
            return rule._nominal
    else:
        model = ServicerModel(servicer_lbr_urdf(), 'lbr_flange')
        q = np.array([0.0, 0.4, 0.0, -1.6, 0.0, -1.5, 0.0])

        def make():
            return ServicerAdmittance(model, BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003], None,
                                      pin.SE3(pin.rpy.rpyToMatrix(0.0, 1.57, 0.0), np.array([-4.8, -0.2, 1.1])),
                                      np.array([0.01, 0.0, -0.02, 0.0, 0.001, 0.0]))

        def step(rule):
            rule.step(0.01, q, np.zeros(7), np.zeros(7), np.array([5.0, 0, 0, 0, 1.0, 0]), np.zeros(6))

        def rel(state):
            return state.pose_base_in_nominal, state.twist_base_rel_body

        def nominal_of(rule):
            return rule.nominal_body
    fast, ref = make(), make()
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    plan = plan_rebase(fast.state.t, 0.5, [(pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, -0.3), np.array([1.0, -2.0, 0.5])),
                                             inertia, inertia.matrix() @ [0.03, 0.0, 0.07, 0.0, -0.044, 0.01])])
    side_fast, side_ref = PlannedRebase(plan, 0.01), PlannedRebase(plan, 0.01)
    t = fast.state.t
    for _ in range(60):
        before = fast.state.absolute()
        a, b = side_fast.update(t, fast), side_ref.update_reference(t, ref)
        after = fast.state.absolute()
        assert np.abs(after[0].homogeneous - before[0].homogeneous).max() < 1e-12
        assert np.abs(after[1] - before[1]).max() < 1e-12
        if a is not None:
            assert a.fraction == b.fraction
            assert np.abs(a.twist_nominal_body - b.twist_nominal_body).max() < 1e-12 * np.abs(b.twist_nominal_body).max()
            assert np.abs(a.nominal_mass_matrix - b.nominal_mass_matrix).max() < 1e-12 * np.abs(b.nominal_mass_matrix).max()
            m_a, m_b = nominal_of(fast), nominal_of(ref)
            assert np.abs(m_a.mass_matrix_inv - m_b.mass_matrix_inv).max() < 1e-12 * np.abs(m_b.mass_matrix_inv).max()
            assert np.abs(m_a.inertia.matrix() - m_b.mass_matrix).max() < 1e-12 * np.abs(m_b.mass_matrix).max()
        step(fast)
        step(ref)
        t += 0.01
        sa, sb = fast.state, ref.state
        (ga, va), (gb, vb) = rel(sa), rel(sb)
        assert np.abs(ga.homogeneous - gb.homogeneous).max() < 1e-12
        assert np.abs(va - vb).max() < 1e-12
        assert np.abs(sa.pose_nominal_in_orbit.homogeneous - sb.pose_nominal_in_orbit.homogeneous).max() < 1e-12
        assert np.abs(sa.twist_nominal_body - sb.twist_nominal_body).max() < 1e-12
    assert side_fast.done and side_ref.done


def test_a_non_finite_twist_increment_is_refused_by_name_and_changes_nothing():
    from hil_dynamics.models import servicer_lbr_urdf
    from hil_dynamics.servicer import ServicerAdmittance, ServicerModel

    client = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
    servicer = ServicerAdmittance(ServicerModel(servicer_lbr_urdf(), 'lbr_flange'), BODY, np.full(6, 0.01), None,
                                  pin.SE3.Identity(), np.zeros(6))
    for rule in (client, servicer):
        state = rule.state
        with pytest.raises(ValueError, match='twist_nominal_body'):
            rule.rebase_nominal_twist([0.0, np.nan, 0.0, 0.0, 0.0, 0.0])
        assert rule.state is state


def test_a_ramp_step_that_would_give_a_non_finite_twist_is_refused_and_changes_nothing():
    """:meth:`PlannedRebase.update` checks the new twists its one compiled call gives (``V_n'`` and the side's
    ``V_rel'``): a rule whose relative twist went non-finite makes it raise InputError naming the re-basing, the
    rule keeps its state, and the compound's free motion (which does not depend on the rule) is at the step's time."""
    from hil_common.errors import InputError

    rule = ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003])
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    plan = plan_rebase(0.0, 0.5, [(pin.SE3.Identity(), inertia,
                                   inertia.matrix() @ [0.03, 0.0, 0.07, 0.0, -0.044, 0.01])])
    side = PlannedRebase(plan, 0.01)
    side.update(0.0, rule)
    g_n, g_c = rule.state.pose_arrays()
    rule.state = type(rule.state).of_arrays(rule.state.t, g_n, rule.state.twist_nominal_body, g_c,
                                            np.array([0.0, np.inf, 0.0, 0.0, 0.0, 0.0]))
    state = rule.state
    with pytest.raises(InputError, match='re-basing'):
        side.update(0.01, rule)
    assert rule.state is state
    # the compound's free motion did move on to the step's time: its state says so (its arrays were stepped)
    assert side.free.state.t == pytest.approx(0.01, abs=1e-12)


def test_the_ramp_may_mix_its_two_paths_on_one_side():
    """A side stepped by :meth:`PlannedRebase.update` and :meth:`PlannedRebase.update_reference` in turn (the free
    motion then moves by its admittance between compiled calls, which own its arrays otherwise) stays with a side
    stepped by ``update`` only, to 1e-12."""
    inertia = pin.Inertia(9661.0, np.array([-0.95, -0.03, 0.24]), np.diag([2.0e4, 1.4e5, 1.3e5]))
    plan = plan_rebase(0.0, 0.3, [(pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, -0.3), np.array([1.0, -2.0, 0.5])),
                                   inertia, inertia.matrix() @ [0.03, 0.0, 0.07, 0.0, -0.044, 0.01])])
    rules = [ClientAdmittance(BODY, [0.01, 0.0, 0.0, 0.002, -0.0436, 0.003]) for _ in range(2)]
    mixed, plain = PlannedRebase(plan, 0.01), PlannedRebase(plan, 0.01)
    for k in range(32):
        t = 0.01 * k
        (mixed.update if k % 3 else mixed.update_reference)(t, rules[0])
        plain.update(t, rules[1])
        for rule in rules:
            rule.step(np.array([2.0, 0.0, -1.0, 0.0, 3.0, 0.0]), 0.01)
        a, b = rules[0].state, rules[1].state
        assert np.abs(a.twist_nominal_body - b.twist_nominal_body).max() < 1e-12
        assert np.abs(a.twist_client_rel_body - b.twist_client_rel_body).max() < 1e-12
    assert mixed.done and plain.done
