"""The snare rules against closed forms and invariants (seeds 000 and 002)."""

import math

import numpy as np
import pinocchio as pin
import pytest

from hil_dynamics.rigid_body import RigidBody
from hil_snare.arms import ArmSpec, Link, SSRMS_TABLE1
from hil_snare.contact import LooseWireLaw, SnareWireLaw
from hil_snare.geometry import LeeSnare, SingleWire
from hil_snare.joints import DEG, BandedJoint, SsrmsGearbox
from hil_snare.runner import HtvCaptureConfig, ScenarioInputError, build_htv_capture, run
from hil_snare.system import ArmConfig, Grapple, SnareSystem


# ---- contact law: seed 000 Eqs. (10)-(12), Table 4 -----------------------------------------------

@pytest.mark.parametrize('delta, delta_dot', [(0.001, 0.0), (0.003, 0.02), (0.005, -0.01)])
def test_snare_wire_normal_force_is_eqs_10_and_11_with_table4(delta, delta_dot):
    law = SnareWireLaw()
    f_s = 0.0043 * (math.exp(2162.2 * delta) - 1.0) + 648.6 * delta      # Eq. (10)
    f_k = 0.83e7 * delta ** 2 * delta_dot                                  # Eq. (11)
    assert law.static_force(delta) == pytest.approx(f_s, rel=1e-12)
    assert law.normal_force(delta, delta_dot) == pytest.approx(max(0.0, f_s + f_k), rel=1e-12)
    assert law.normal_force(-delta, delta_dot) == 0.0                      # no contact, no force


def test_friction_is_coulomb_eq_12_opposite_the_slip_and_regularised_at_rest():
    law = SnareWireLaw()
    f_n = law.normal_force(0.004, 0.0)
    slip = np.array([0.3, 0.0, -0.4])                                      # |v_t| = 0.5 m/s >> v_eps
    f = law.friction(f_n, slip)
    assert np.linalg.norm(f) == pytest.approx(0.08 * f_n, rel=1e-5)        # Eq. (12): mu F_n
    assert np.allclose(np.cross(f, slip), 0.0) and f @ slip < 0.0
    assert np.linalg.norm(law.friction(f_n, np.zeros(3))) == 0.0


def test_wire_potentials_are_the_integrals_of_the_static_forces():
    for law in (SnareWireLaw(), LooseWireLaw.at_position(90)):
        for d in (0.002, 0.004, 0.006):
            h = 1e-7
            assert (law.potential(d + h) - law.potential(d - h)) / (2 * h) == pytest.approx(law.static_force(d), rel=1e-5)


def test_loose_wire_static_force_is_seed002_table4_quadratic_without_offset():
    law = LooseWireLaw.at_position(65)
    d = 0.004
    assert law.static_force(d) == pytest.approx(878089.0 * d * d - 1086.0 * d)


# ---- joints: seed 000 Eqs. (1)-(2), seed 002 Table 2 ------------------------------------------------

def test_ssrms_gearbox_is_eqs_1_2_and_continuous_at_delta():
    g = SsrmsGearbox()
    d = 9.17e-4
    assert g.torque(d) == pytest.approx(434.5)
    assert g.torque(-0.5 * d) == pytest.approx(-434.5 / 4.0)
    assert g.torque(3 * d) == pytest.approx(1.33e6 * 2 * d + 434.5)


def test_jemrms_band_table_is_table2_in_si():
    j = BandedJoint.jemrms_table2()
    assert j.k[0] == pytest.approx(12.5 * 180 / math.pi) and j.d[2] == pytest.approx(17.6 * 180 / math.pi)
    # continuous torque: the value at the first edge is K_1 * 0.04 deg
    assert j.torque(0.04 * DEG) == pytest.approx(12.5 * 0.04)


def _one_joint_system(joint_law, link_inertia, motor_inertia):
    spec = ArmSpec('one', (Link(1.0, (0, 0, 0), (1, 1, 1, 0, 0, 0), (0, 0, 0)),
                           Link(1e-6, (0, 0, 0), (link_inertia, 1e-6, 1e-6, 0, 0, 0), (1.0, 0, 0))), 'x')
    arm = ArmConfig(spec, joint_law, motor_inertia, 0.0)
    far_wire = SingleWire((10.0, 0.0), (10.0, 0.2), 0.25)
    target = RigidBody(1.0, [1.0, 1.0, 1.0])
    return SnareSystem(target, Grapple((0, 0, 0.1), (0, 0, 1), 0.2, 0.01), far_wire, SnareWireLaw(), arm)


def _frequency(t, y):
    s = np.signbit(y)
    idx = np.nonzero(s[1:] != s[:-1])[0]
    tz = t[idx] - y[idx] * (t[idx + 1] - t[idx]) / (y[idx + 1] - y[idx])
    return math.pi / np.mean(np.diff(tz))


@pytest.mark.parametrize('which', ['ssrms', 'jemrms'])
def test_small_signal_frequency_in_the_linear_band_is_sqrt_k_over_j(which):
    """Two-inertia joint preloaded into its linear band: omega = sqrt(K (1/J_link + 1/J_motor))."""
    if which == 'ssrms':
        law = SsrmsGearbox()
        j_link, j_motor = 2000.0, 2.67e-4 * 1845.0 ** 2
        delta_star = 5 * law.delta_rad
    else:
        law = BandedJoint([0.04 * DEG, 0.06 * DEG], [12.5 / DEG, 475 / DEG, 475 / DEG], [0.0, 0.0, 0.0])
        j_link, j_motor = 300.0, 50.0
        delta_star = 0.2 * DEG
    k = law.linear_band_stiffness()
    system = _one_joint_system(law, j_link, j_motor)
    tau_star = float(law.torque(delta_star))
    system.tau_c = np.array([tau_star])             # the motor holds the preload ...
    system.tau_link_bias = np.array([-tau_star])    # ... against an external torque on the link
    omega = math.sqrt(k * (1.0 / j_link + 1.0 / j_motor))
    eps = 0.05 * delta_star                          # small signal: stays in the linear band
    poses, x = system.initial_state(pin.SE3.Identity(), np.zeros(6), [0.0], [0.0])
    x[2] = delta_star + eps                          # motor angle q_m
    dt = 2 * math.pi / omega / 200
    ts, ys = [], []
    t = 0.0
    for _ in range(1200):
        q, v, qm, vm, _ = system.split(x)
        ts.append(t)
        ys.append(qm[0] - q[0] - delta_star)
        poses, x = system.step(t, dt, poses, x)
        t += dt
    assert _frequency(np.array(ts), np.array(ys)) == pytest.approx(omega, rel=2e-3)


# ---- invariants through a contact ----------------------------------------------------------------

def test_energy_is_conserved_through_a_wire_contact_with_damping_and_friction_off():
    """SSRMS + HTV, case-study start, wires fixed (no drive), D = k_p = k_d = mu = c = 0."""
    cfg = HtvCaptureConfig(grapple_in_corner=True, lee_velocity_mps=(0.0, 0.0, -0.08),
                           law=SnareWireLaw(c_kg_per_sm2=0.0, mu=0.0), motor_damping_nms_per_rad=0.0,
                           kp=0.0, kd=0.0, final_angle_deg=130.0, dt_s=1e-3)
    system, _, poses, x = build_htv_capture(cfg)
    trace, poses, x = run(system, None, poses, x, 0.8, cfg.dt_s, 1.0, record_every=20, energy=True)
    a = trace.arrays()
    assert a['normal_force_n'].max() > 50.0          # the run does go through a hard contact
    e = a['energy_j']
    assert np.max(np.abs(e - e[0])) < 2e-5 * e[0]


def test_linear_momentum_of_free_arm_and_target_is_conserved_through_a_contact():
    """Free-floating SSRMS (base on a free flyer) whose LEE snare hits the HTV's grapple; all dissipation on."""
    from hil_snare.targets import htv
    body, grapple, pose_gf_in_htv = htv()
    arm = ArmConfig(SSRMS_TABLE1, SsrmsGearbox(), 2.67e-4 * 1845.0 ** 2, 18000.0, base='free')
    snare = LeeSnare(final_angle_deg=130.0)
    system = SnareSystem(body, grapple, snare, SnareWireLaw(), arm)
    q0 = np.array(cfgq := [-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5]) * DEG
    del cfgq
    qf = np.concatenate([pin.SE3ToXYZQUAT(pin.SE3.Identity()), q0])
    pin.framesForwardKinematics(system.model, system.data, qf)
    pose_lee = system.data.oMf[system.frame_id]
    pose_gf_in_lee = pin.SE3(np.eye(3), np.array([-0.476, 0.0, -0.045]))     # near the bottom wire
    pose_htv = pose_lee * pose_gf_in_lee * pose_gf_in_htv.inverse()
    v_htv_world = pose_lee.rotation @ np.array([0.0, 0.0, -0.05])             # toward that wire
    poses, x = system.initial_state(pose_htv, np.concatenate([pose_htv.rotation.T @ v_htv_world, np.zeros(3)]),
                                    q0, np.zeros(system.nv), pose_base_in_world=pin.SE3.Identity())
    p0 = system.linear_momentum(poses, x)
    trace, poses, x = run(system, None, poses, x, 0.6, 2e-3, 1.0, record_every=10)
    assert trace.arrays()['normal_force_n'].max() > 10.0
    p1 = system.linear_momentum(poses, x)
    htv_p1 = poses[0].rotation @ (body.mass_kg * system.split(x)[4][:3])
    assert np.linalg.norm(htv_p1 - p0) > 0.5                                   # the contact moved momentum ...
    assert np.linalg.norm(p1 - p0) < 1e-6 * np.linalg.norm(p0)                 # ... but the total is conserved


# ---- bad input: a clear error naming the field, no run ----------------------------------------------

@pytest.mark.parametrize('make, field', [
    (lambda: SsrmsGearbox(k_g_nm_per_rad=-1.0), 'k_g_nm_per_rad'),
    (lambda: SnareWireLaw(gamma_n_per_m=-5.0), 'gamma_n_per_m'),
    (lambda: SnareWireLaw(mu=-0.1), 'mu'),
    (lambda: LooseWireLaw(mu=-0.1), 'mu'),
    (lambda: LeeSnare(tightening_time_s=0.0), 'tightening_time_s'),
    (lambda: BandedJoint([0.06 * DEG, 0.04 * DEG], [1, 2, 3], [0, 0, 0]), 'band_edges_rad'),
    (lambda: BandedJoint([0.04 * DEG, 0.06 * DEG], [1, -2, 3], [0, 0, 0]), 'stiffness_nm_per_rad'),
])
def test_bad_rule_parameters_are_refused_naming_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_grapple_outside_the_wire_triangle_is_refused_when_the_scenario_says_inside():
    with pytest.raises(ScenarioInputError, match='rel_position_m'):
        build_htv_capture(HtvCaptureConfig(rel_position_m=(-0.476, 0.12, 0.0)))


def test_compiled_closest_point_equals_the_numpy_reference():
    from hil_snare.geometry import closest_on_polyline, closest_on_polyline_reference
    curve = LeeSnare().curves(2.3)[1]
    rng = np.random.default_rng(1)
    for p in rng.uniform(-0.2, 0.2, (200, 2)):
        a, b = closest_on_polyline(curve, p), closest_on_polyline_reference(curve, p)
        assert a[0] == pytest.approx(b[0], abs=1e-15) and a[2] == b[2]
        assert np.allclose(a[1], b[1], atol=1e-15)


def test_camera_frame_control_is_eqs_6_and_7():
    """Eq. (6): J_c q_d' reproduces the commanded LEE twist in the camera (LEE) frame, and the LEE
    frame moves along its own axes; Eq. (7): tau_c = k_p (q_d - q_a) + k_d (q_d' - q_a')."""
    from hil_snare.arms import build_model
    from hil_snare.control import CameraFrameController

    model = build_model(SSRMS_TABLE1)
    data = model.createData()
    q = np.radians([-31.87, 42.73, -66.72, 105.1, -178.6, -174.6, -131.5])
    ctrl = CameraFrameController(model, q)
    twist = np.array([0.02, -0.01, 0.03, 0.001, 0.0, -0.002])
    rate = ctrl.desired_rate(q, twist)
    fid = model.getFrameId('lee')
    jac_world = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    rot = data.oMf[fid].rotation
    assert np.allclose(rot.T @ (jac_world[:3] @ rate), twist[:3], atol=1e-12)    # linear velocity in LEE axes
    assert np.allclose(rot.T @ (jac_world[3:] @ rate), twist[3:], atol=1e-12)
    dq = np.full(7, 0.001)
    q_a = q + 0.01
    rate_a = ctrl.desired_rate(q_a, twist)                                         # Eq. (6) at the measured q_a
    tau = ctrl.update(0.01, q_a, dq, twist)
    assert np.allclose(tau, 120.0 * (q - q_a) + 240.0 * (rate_a - dq))
    assert np.allclose(ctrl.q_d, q + 0.01 * rate_a)                               # q_d integrates q_d'


def test_twin_contact_wrenches_are_equal_and_opposite():
    """``SnareSystem.wrenches`` (the lab twin's entry): action = -reaction, about the same world point."""
    system, _, poses, x = build_htv_capture(HtvCaptureConfig(grapple_in_corner=True, corner_gap_m=-0.003))
    q, v, _, _, vt = system.split(x)
    pose_lee, twist_lee = system.lee_pose_and_twist(poses, q, v)
    w_t, w_lee, _ = system.wrenches(x[-1], pose_lee, twist_lee, poses[0], vt)
    assert np.linalg.norm(w_t[:3]) > 1.0                                    # the corner start is in contact
    on_target = poses[0].act(pin.Force(w_t)).vector                          # both in the world, about its origin
    on_lee = pose_lee.act(pin.Force(w_lee)).vector
    assert np.allclose(on_target, -on_lee, atol=1e-9 * np.abs(on_target).max())
