"""The graph of ``cisas_docking.launch.py`` live on loopback DDS, judged on the simulated timeline.

The live run (:func:`hil_docking.live.run_live`) starts :func:`hil_docking.graph.cisas_graph`
with :class:`hil_bringup.graph_runner.RunningGraph`: the emulated CISAS robot and contact
(``facility_emulator_node``) and ``docking_facility_node``. It is judged by
:func:`hil_docking.live.judge_live` against independent references:

* the approach commands lie on the closed-form CW transfer arc (Eq. 12) to 1e-9 m. A
  straight line at the same speed is ~1e-5 m off it over the test's 0.2 s approach (Coriolis
  ``~ n v t^2``), so the check sees the CW terms;
* the restitution is the orbital closed form's (Eq. 15) to 2 %. Without compensation it is
  14 % too high (the control below). The restitution and the impulse equal those of the
  lockstep runner with the node's rate differencing (the same loop without DDS) to 1e-5;
* after the separation every command lies on the free CW motion of the separation state.

Wall time never fails the run: a step whose robot sample is late waits for it, so the physics
stays that of the stated loop delay and the simulated timeline falls behind the wall clock;
the waits and misses are counted and printed. The scenario is the shipped one with the start
50 times closer, a 0.2 s approach and a 0.1 s post-impact leg (0.7 s of simulated time).
"""

import numpy as np
import pytest

from hil_docking.facility_rule import RobotAnswer, StampedSamples
from hil_docking.live import RESTITUTION_TOL, LiveObservations, judge_live, run_live
from hil_docking.mission import run_mission
from hil_docking.scenario import load_docking_scenario, scenario_path


def short_scenario(folder):
    text = scenario_path().read_text()
    for old, new in (('start_lvlh_m: [0.3, -0.8, 0.3]', 'start_lvlh_m: [0.006, -0.016, 0.006]'),
                     ('duration_s: 6.0', 'duration_s: 0.2'), ('duration_s: 10.0', 'duration_s: 0.1')):
        assert old in text
        text = text.replace(old, new)
    path = folder / 'cisas_docking_short.yaml'
    path.write_text(text)
    return path


def observations_of(run):
    """What a live observer would see of a lockstep run: its commands and its final status."""
    s = run.summary
    status = {'phase': 'post_impact', 't_s': float(run.t[-1]), 'restitution': s['restitution'],
              'impulse_n_s': s['impulse_n_s'], 'closing_speed_in_m_s': s['closing_speed_in_m_s'],
              'contact_start_s': s['contact_start_s'], 'separation_s': s['separation_s'],
              'separation_state_lvlh': s['separation_state_lvlh']}
    statuses = [{'phase': p, 't_s': float(t)} for t, p in zip(run.t, run.phase)] + [status]
    return LiveObservations(commands=[(float(t), x[0:3]) for t, x in zip(run.t, run.state_lvlh)], statuses=statuses)


def test_stamped_samples_never_use_a_sample_before_its_stamp_and_count_misses():
    samples = StampedSamples(0.001)
    for k in range(5):
        samples.put(0.010 + k * 0.001, k)             # arrived early: realised 10 ms after their command
    assert samples.complete_at(0.0095) and samples.at(0.0095) is None and samples.misses == 1
    assert samples.at(0.010) == (0.010, 0)
    assert samples.at(0.0125)[1] == 2 and samples.misses == 1
    samples.put(0.0125, 'old')                        # stamps must increase
    assert samples.out_of_order == 1
    assert samples.complete_at(0.014) and not samples.complete_at(0.0141)   # a later sample may still come
    assert samples.at(0.0165)[1] == 4 and samples.misses == 2       # nothing stamped in (15.5, 16.5] ms
    samples.put(0.0175, 5)
    assert samples.complete_at(0.0175) and samples.at(0.0175)[1] == 5


def test_the_robot_answers_only_for_a_time_at_or_after_the_first_command_it_heard():
    answer = RobotAnswer(wait=True)
    answer.answer(5.0)                                 # before any command: nothing to answer for
    assert not answer.answered
    answer.command_heard(10.0)
    answer.command_heard(11.0)                         # only the first counts
    answer.answer(9.999)
    answer.answer(float('nan'))
    assert not answer.answered and answer.answered_s == 9.999
    answer.answer(10.0)
    assert answer.answered
    answer.answer(3.0)                                 # an older answer does not take it back
    assert answer.answered and answer.answered_s == 10.0
    assert RobotAnswer(wait=False).answered


def test_the_live_verdict_passes_the_compensated_mission_and_fails_the_uncompensated_one(tmp_path):
    sc = load_docking_scenario(short_scenario(tmp_path))
    good = judge_live(sc, observations_of(run_mission(sc)))
    assert good['ok'], good['problems']
    assert good['approach_max_off_arc_m'] < 1e-12 and good['post_impact_max_off_arc_m'] < 1e-10
    bad = judge_live(sc, observations_of(run_mission(sc, compensation='none')))
    assert not bad['ok'] and len(bad['problems']) == 1 and 'restitution' in bad['problems'][0]
    assert bad['restitution_error'] > 5 * RESTITUTION_TOL


def test_the_launch_file_graph_flies_the_mission_live(tmp_path):
    path = short_scenario(tmp_path)
    sc = load_docking_scenario(path)
    lockstep = run_mission(sc, difference_robot_pose=True).summary      # the node's loop without DDS
    summary = run_live(path, tmp_path, wall_timeout_s=240.0)
    print('\nlive CISAS graph:', {k: summary.get(k) for k in (
        'wall_s', 't_s', 'restitution', 'impulse_n_s', 'contact_duration_s', 'late_sample_steps', 'pose_sample_misses',
        'wrench_sample_misses', 'dropped_steps', 'late_commands', 'approach_max_off_arc_m', 'post_impact_max_off_arc_m')})
    assert summary['ok'], summary['problems']
    assert [p['phase'] for p in summary['phases']] == ['approach', 'contact', 'post_impact']
    assert not {k: n['late_kernels'] for k, n in summary['nodes'].items() if n.get('late_kernels')}   # (kernel_loads)
    # the live loop is the lockstep loop, whatever the wall clock did (stamps in float seconds: ~1e-7)
    assert summary['restitution'] == pytest.approx(lockstep['restitution_at_separation'], rel=1e-5)
    assert summary['impulse_n_s'] == pytest.approx(lockstep['impulse_n_s'], rel=1e-5)
    assert summary['contact_duration_s'] == pytest.approx(lockstep['separation_s'] - lockstep['contact_start_s'],
                                                          abs=2.5 * sc.control_period_s)
    assert summary['closing_speed_in_m_s'] == pytest.approx(sc.closing_speed_m_s, rel=1e-9)
    assert np.isfinite(summary['late_sample_steps']) and summary['dropped_steps'] == 0


def test_the_demo_s_live_stage_says_when_the_live_part_failed(tmp_path):
    """``docking_demo`` exits 1 when :func:`hil_docking.demo.live_stage` returns False: here the
    mission cannot finish within the wall-time limit it is given."""
    from hil_docking.demo import live_stage

    path = short_scenario(tmp_path)
    lines = []
    ok = live_stage(load_docking_scenario(path), path, tmp_path, 0.5, lines.append)
    text = '\n'.join(lines)
    assert ok is False, text
    assert 'live stage FAILED' in text and 'did not finish its post-impact leg within 0.5 s' in text, text
    assert (tmp_path / 'live_summary.json').is_file()


def test_the_launch_file_graph_docks_in_the_lab_twin_through_a_physical_contact(tmp_path):
    """``lab:=twin`` (issue 13 item 3): the same ``io`` nodes as on the facility (the CISAS arm's motion
    table, the mock-up pose from its joints, the F/T driver) against the MuJoCo lab twin, on its
    simulated clock. The contact happens in the twin: the probe's ball meets the target's plate and
    its spring of ``k_L`` is compressed; the F/T sensor measures it and sends it over RDT/UDP.

    Judged against independent references: the force the driver published follows the lumped law
    ``k_L x + b_L x'`` of the penetration the arm's joints give (peak within 3 %); the live loop's
    restitution is the orbital closed form's within the twin's tolerance (:data:`TWIN_RESTITUTION_TOL`,
    its loop delay is its servo's, not exactly the scenario's), and the lockstep loop's through the twin on
    the graph's timeline within :data:`TWIN_LOCKSTEP_TOL` (0.5 %; one control period more or less in the loop
    moves it by 1.4 %: CI once got +24 % when the F/T stamps came from the driver's clock); the impulse is
    Eq. (30)'s and within 3 % of the emulated lockstep loop's."""
    import json

    from hil_docking.demo import live_stage
    from hil_docking.live import TWIN_LOCKSTEP_TOL, TWIN_RESTITUTION_TOL
    from hil_docking.twin_mission import run_twin_mission

    path = short_scenario(tmp_path)
    sc = load_docking_scenario(path)
    lockstep = run_mission(sc, difference_robot_pose=True).summary
    twin_lockstep = run_twin_mission(path)
    lines = []
    ok = live_stage(sc, path, tmp_path, 300.0, lines.append, lockstep=lockstep, lab='twin',   # docking_demo --lab twin
                    twin_lockstep=twin_lockstep)
    summary = json.loads((tmp_path / 'live_summary.json').read_text())
    contact = summary['measured_contact']
    print('\nCISAS graph in the lab twin:', {k: summary.get(k) for k in (
        'wall_s', 't_s', 'restitution', 'restitution_error', 'impulse_n_s', 'contact_duration_s', 'late_sample_steps',
        'wrench_sample_misses', 'dropped_steps', 'approach_max_off_arc_m', 'post_impact_max_off_arc_m',
        'restitution_vs_lockstep', 'twin_clock')}, contact)
    assert ok and summary['ok'], summary['problems']
    assert any('the contact in the twin: peak' in line for line in lines), lines
    assert [p['phase'] for p in summary['phases']] == ['approach', 'contact', 'post_impact']
    assert abs(summary['restitution_error']) <= TWIN_RESTITUTION_TOL
    # the same loop as the lockstep one through the twin, on the same timeline (the twin's clock makes it so;
    # a barrier miss, the twin stepping without the arm's command, is counted and judged by this)
    assert abs(summary['restitution_vs_lockstep']) <= TWIN_LOCKSTEP_TOL
    assert summary['twin_clock']['steps'] > 0, summary['twin_clock']
    assert summary['impulse_n_s'] == pytest.approx(lockstep['impulse_n_s'], rel=0.03)
    assert contact['ok'], contact
    # the twin's compliance is the scenario's: k_L x + b_L x' of the measured penetration
    assert contact['max_penetration_m'] > 0.004                       # the lockstep loop: 5.6 mm
    assert contact['peak_force_n'] == pytest.approx(contact['peak_law_n'], rel=0.03)
    assert contact['max_law_error_n'] < 0.1 * contact['peak_law_n']
    assert summary['dropped_steps'] == 0
