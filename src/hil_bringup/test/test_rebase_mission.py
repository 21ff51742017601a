"""Post-grasp re-basing of the nominal in the HIL lockstep (seed 004 Eqs. 4, 23, 29; issue 11 item 5).

Steps (to keep the test near 25 s): the approach runs at dt = 4 ms up to 30 s (the same
phase times and, to 0.1 %, the same contact wrench as at 1-2 ms), then dt = 2 ms from before
the grasp command: at 2 ms the grip (5e4 N/m, sampled with a zero-order hold) keeps the summed
momentum to 1e-7 after the grasp like the 1 ms run, at 4 ms it does not (the stack slowly comes
apart), so 2 ms is the coarsest honest step once in contact.
"""

import numpy as np
import pinocchio as pin
import pytest

from hil_bringup.runners.mission import HilMission, MissionRecord
from hil_bringup.scenario import load_scenario
from hil_motion_table.table import TableLimits


@pytest.fixture(scope='module')
def run():
    scenario = load_scenario('envisat_capture')
    # A shorter settle and ramp than the scenario's (5 s, 10 s) keep the test near 15 s of CPU;
    # the 600 s figures in docs/envisat_capture.md use the scenario's values.
    scenario.rebase.after_post_grasp_s, scenario.rebase.ramp_s = 3.0, 6.0
    # The tables realise their commands two samples late (8 ms, then 4 ms: the twin's command
    # delay), and the passivity controllers act on what that injects.
    m = HilMission(scenario, dt=0.004, passivity_control=True, robot_delay_steps=2)
    jumps, commands = [], []
    update = m.rebase_update
    nominals = []      # the two sides' nominals after each increment (each applies the plan to its own)

    def checked(t):
        client, servicer = m.client, m.servicer.admittance
        before = m.onboard_states()
        table_before = (client.state.pose_client_in_nominal, servicer.state.pose_base_in_nominal,
                        client.state.twist_client_rel_body.copy(), servicer.state.twist_base_rel_body.copy())
        step = update(t)
        if step is not None:
            nominals.append((client.state.pose_nominal_in_orbit, client.state.twist_nominal_body.copy(),
                             servicer.state.pose_nominal_in_orbit, servicer.state.twist_nominal_body.copy()))
            after = m.onboard_states()
            jumps.append(max(max(np.abs(a.translation - b.translation).max(), np.abs(pin.log3(a.rotation.T @ b.rotation)).max())
                             if isinstance(a, pin.SE3) else np.abs(np.asarray(a) - np.asarray(b)).max()
                             for a, b in zip(before, after)))
            commands.append((table_before, (client.state.pose_client_in_nominal, servicer.state.pose_base_in_nominal,
                                            client.state.twist_client_rel_body.copy(),
                                            servicer.state.twist_base_rel_body.copy())))
        return step

    m.rebase_update = checked
    approach = m.run(30.0, record_every_s=0.1)
    m.dt, m.obsw_every = 0.002, 2
    m.k = int(round(m.t / m.dt))
    m.t, m.record = m.k * m.dt, MissionRecord()
    m.step()
    # Grasp near 31.4 s, re-basing from post_grasp + 3 s over 6 s; then 12 s on the new nominal.
    rec = m.run(31.5 - m.t + scenario.rebase.after_post_grasp_s + scenario.rebase.ramp_s + 12.0, record_every_s=0.1)
    for name in ('t', 'pos_grasp_in_nominal_cmd', 'pos_base_in_nominal_cmd'):
        setattr(rec, name, np.concatenate((getattr(approach, name), getattr(rec, name))))
    return scenario, m, rec, np.array(jumps), commands, nominals


def test_rebase_happens_after_the_grasp_and_completes(run):
    scenario, m, rec, jumps, _, _ = run
    post = m.controller.phase_times['post_grasp']
    assert m.rebase.plan.t_start == pytest.approx(post + scenario.rebase.after_post_grasp_s, abs=m.dt)
    assert all(side.done for side in m.rebase_sides)
    assert len(jumps) == pytest.approx(scenario.rebase.ramp_s / m.dt, abs=2)


def test_both_sides_keep_one_nominal(run):
    """Each admittance applies the plan to its own nominal (as the live graph's two nodes do): the two
    nominals stay one (Eq. 23) through the ramp, to the rounding of their integrators."""
    nominals = run[5]
    pose = max(np.abs(gc.homogeneous - gs.homogeneous).max() for gc, _, gs, _ in nominals)
    twist = max(np.abs(vc - vs).max() for _, vc, _, vs in nominals)
    print(f'\nclient and servicer nominal apart by at most {pose:.1e} (pose), {twist:.1e} (twist) over the ramp')
    assert pose < 1e-9 and twist < 1e-9


def test_absolute_states_are_continuous_across_every_increment(run):
    _, _, _, jumps, _, _ = run
    print(f'\nlargest change of g_t, V_t, g_b, V_b, q, dq across a re-basing increment: {jumps.max():.1e}')
    assert jumps.max() < 1e-9


def test_table_commands_do_not_jump(run):
    """Poses unchanged by every increment; twists change by less than 1 mm/s (1e-3 rad/s) per step."""
    _, m, _, _, commands, _ = run
    limits = TableLimits((0, 0, 0), (1, 1, 1))
    pose_jump = max(max(np.abs(b[i].translation - a[i].translation).max() for i in (0, 1)) for a, b in commands)
    twist_jump = max(max(np.abs(b[i] - a[i]).max() for i in (2, 3)) for a, b in commands)
    total = max(np.abs(commands[-1][1][i] - commands[0][0][i]).max() for i in (2, 3))
    print(f'\nper increment: pose {pose_jump:.1e} m, twist {twist_jump:.1e}; a hard switch would jump by {total:.3f}')
    assert pose_jump < 1e-9
    assert twist_jump < 1e-3 and twist_jump < 0.05 * total
    assert total < limits.max_linear_speed


def test_tables_stay_in_their_boxes_after_the_grasp(run):
    scenario, m, rec, _, _, _ = run
    assert rec.exit_time('pos_grasp_in_nominal_cmd', scenario.workspace_box_m) is None
    assert rec.exit_time('pos_base_in_nominal_cmd', scenario.servicer_workspace_box_m) is None
    # After the ramp the tables only follow the stack's internal motion: their drift over the last
    # 10 s, extrapolated to 600 s after the grasp, stays inside the boxes.
    assert rec.t[-1] - 10.0 >= m.rebase_sides[0].last.t
    late = rec.t >= rec.t[-1] - 10.0
    for name, box in (('pos_grasp_in_nominal_cmd', scenario.workspace_box_m),
                      ('pos_base_in_nominal_cmd', scenario.servicer_workspace_box_m)):
        p = getattr(rec, name)
        rate = np.abs(p[late][-1] - p[late][0]).max() / 10.0
        reach = np.abs(p[-1] - p[0]).max() + rate * (600.0 + m.controller.phase_times['post_grasp'] - rec.t[-1])
        print(f'\n{name}: drift {rate * 1e3:.3f} mm/s after the ramp, extrapolated reach at 600 s {reach:.3f} m')
        assert reach < 0.5 * box.min()


def test_passivity_controller_removes_what_the_table_delay_injects(run):
    """Seed 004 §VI: the delayed tables inject energy at the client port; the controller dissipates it.

    Without the controller the observers see up to about 1e-3 J (4 ms of delay; 4e-3 J at 20 ms,
    1e-2 J at 50 ms: docs/envisat_capture.md); with it what stays observed is under 1 % of what it
    dissipated, and the capture timeline is unchanged (phase times to the sample).
    """
    _, m, rec, _, _, _ = run
    client, servicer = rec.passivity_client, rec.passivity_servicer
    assert client.shape == (len(rec.pose_client_in_nominal_cmd), 5) and np.isfinite(client).all() and np.isfinite(servicer).all()
    dissipated = client[-1, 3] + servicer[-1, 3]
    print(f'\ndissipated: client {client[-1, 3]:.2e} J, servicer {servicer[-1, 3]:.2e} J; max E_obs left: client '
          f'{client[:, 0].max():.1e} J, servicer {servicer[:, 0].max():.1e} J; client port net {client[-1, 1]:.1e} J')
    # The delay injects energy (the controller had to act), and what stays observed is < 1 % of it.
    assert client[-1, 3] > 1e-5 and servicer[-1, 3] > 1e-5
    assert client[:, 0].max() < 1e-2 * dissipated and servicer[:, 0].max() < 1e-2 * dissipated
    # The capture is not disturbed: grasp and post-grasp within a sample of the delay-free run's
    # (30.812 s and 31.416 s at 4 ms, test_envisat_mission / docs) and the grip latched.
    assert m.contact.latched
    assert m.controller.phase_times['grasp'] == pytest.approx(30.812, abs=0.0041)
    assert m.controller.phase_times['post_grasp'] == pytest.approx(31.416, abs=0.0041)


@pytest.mark.parametrize('section, key, value, name', [
    ('rebase', 'ramp_s', -1.0, "'rebase.ramp_s'"),
    ('rebase', 'after_post_grasp', 5.0, "'rebase.after_post_grasp'"),
    ('passivity', 'max_rate_per_s', 'fast', "'passivity.max_rate_per_s'"),
    ('passivity', 'enabled', 'yes', "'passivity.enabled'"),
])
def test_bad_rebase_or_passivity_field_is_named(tmp_path, section, key, value, name):
    import yaml

    from hil_bringup.scenario import ScenarioError, client_admittance_parameters, scenario_path

    data = yaml.safe_load(scenario_path('envisat_capture').read_text())
    params = client_admittance_parameters(load_scenario('envisat_capture'))
    assert params['passivity_control'] is data['passivity']['enabled']
    data[section][key] = value
    path = tmp_path / 'bad.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match=name):
        load_scenario(path)
