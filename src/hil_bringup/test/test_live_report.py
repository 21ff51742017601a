"""The verdict on a live graph run (hil_bringup.live_report): a run that did not do its job fails."""

from hil_bringup.graph_runner import NodeResult, log_levels
from hil_bringup.graphs import NodeSpec
from hil_bringup.live_report import LiveExpectations, LiveReport

ERROR, OK = 2, 0
SPEC = NodeSpec('hil_sensors', 'ft_sensor_node', 'ft_sensor', 'client')


def run(report, node_output='', returncode=-2):
    return report.finish(10.0, [NodeResult(SPEC, returncode, node_output)], log_levels)


def test_a_clean_run_that_reached_its_phases_is_ok():
    report = LiveReport(LiveExpectations(phases=('sync', 'approach'), min_messages={'cmd': 5}))
    report.phase(0.1, 'sync')
    report.phase(0.2, 'sync')
    report.phase(9.2, 'approach')
    for _ in range(5):
        report.message('cmd')
    report.status(1.0, 'client/ft/fault', OK, 'ok', {})
    summary = run(report, '[INFO] [ft]: streaming\n')
    assert summary['ok'] and summary['problems'] == []
    assert [p['phase'] for p in summary['phases']] == ['sync', 'approach']
    assert summary['rates_hz'] == {'cmd': 0.5}


def test_a_latched_fault_a_missing_phase_a_starved_topic_or_a_crash_each_fail_the_run():
    report = LiveReport(LiveExpectations(phases=('sync', 'approach'), min_messages={'cmd': 5}))
    report.phase(0.1, 'sync')
    report.message('cmd')
    report.status(0.5, 'client/ft/fault', ERROR, 'stale: no sample for 100 ms', {})
    summary = run(report, 'Traceback (most recent call last):\n  boom\n[WARN] [x]: late\n[ERROR] [x]: bad\n', 1)
    assert not summary['ok']
    text = '\n'.join(summary['problems'])
    assert 'phase approach never reached' in text
    assert 'cmd: 1 messages, expected at least 5' in text
    assert 'latched at 0.5 s and never cleared: stale' in text
    assert 'node /client/ft_sensor failed (exit 1)' in text and 'boom' in text
    assert summary['nodes']['/client/ft_sensor'] == {'exit': 1, 'WARN': 1, 'ERROR': 1, 'FATAL': 0, 'unraisable': 0}


RCLPY_UNRAISABLE = '''Exception ignored in: <function Future.__del__ at 0x7f19702a5080>
Traceback (most recent call last):
  File "/x/rclpy/task.py", line 56, in __del__
    if self._exception is not None and not self._exception_fetched:
AttributeError: 'Task' object has no attribute '_exception'
'''


def test_an_unraisable_exception_is_counted_not_failed_on_and_a_raised_one_after_it_still_fails():
    report = LiveReport(LiveExpectations())
    summary = run(report, '[INFO] [x]: up\n' + RCLPY_UNRAISABLE, 0)
    assert summary['ok'], summary['problems']
    assert summary['nodes']['/client/ft_sensor']['unraisable'] == 1
    summary = run(LiveReport(LiveExpectations()), RCLPY_UNRAISABLE + 'Traceback (most recent call last):\n  boom\nValueError: x\n', 0)
    assert not summary['ok'] and 'boom' in summary['problems'][0] and '__del__' not in summary['problems'][0]


def test_a_fault_the_graph_recovers_from_is_reported_but_is_not_a_failure():
    report = LiveReport(LiveExpectations())
    report.status(1.0, 'servicer/ft/fault', ERROR, 'stale', {})
    report.status(1.5, 'servicer/ft/fault', ERROR, 'stale', {})       # the same fault, not a second one
    report.status(3.0, 'servicer/ft/fault', OK, 'reset', {})
    report.status(4.0, 'client/hot_path/status', 1, 'degraded', {'missed_steps': '12', 'rate_hz': '900'})
    summary = run(report)
    assert summary['ok']
    assert summary['faults'] == [{'t_s': 1.0, 'topic': 'servicer/ft/fault', 'message': 'stale', 'cleared_s': 3.0,
                                  'last_message': 'stale'}]
    assert summary['deadline_misses'] == {'client/hot_path/status': {'missed_steps': 12.0}}


def test_a_graph_that_did_not_start_fails():
    report = LiveReport(LiveExpectations())
    report.failed_to_start("stage 'lab' did not become ready: client/joint_states (0/5)")
    assert run(report)['problems'] == ["graph did not start: stage 'lab' did not become ready: client/joint_states (0/5)"]


def test_one_fault_per_episode_all_cleared_by_ok_and_a_hold_in_its_last_moments_is_not_yet_a_latch():
    report = LiveReport(LiveExpectations(latch_grace_s=2.0))
    report.status(1.0, 'client/hot_path/status', ERROR, 'holding: stale', {})
    report.status(1.2, 'client/hot_path/status', ERROR, 'holding: recovering', {})
    report.status(2.0, 'client/hot_path/status', OK, 'ok', {})
    report.status(9.0, 'client/hot_path/status', ERROR, 'holding: stale', {})     # 1 s before the end
    summary = run(report)
    assert [f['cleared_s'] for f in summary['faults']] == [2.0, None] and summary['ok']
    # a hold that ends degraded (WARN: recovering, not yet on time long enough) has ended too
    report.status(4.0, 'servicer/hot_path/status', ERROR, 'overloaded, holding: a step ran 255 ms late', {})
    report.status(6.5, 'servicer/hot_path/status', 1, 'degraded: recovering from a hold: on time again', {})
    assert run(report)['faults'][-1]['cleared_s'] == 6.5
    report.status(6.0, 'servicer/table/status', ERROR, 'holding', {})             # 4 s before the end
    assert 'servicer/table/status latched at 6.0 s' in run(report)['problems'][0]


def test_a_node_killed_while_hung_is_reported_with_the_stack_it_hung_in():
    """A node that needed SIGKILL printed its threads' stacks first (hil_common.ros_testing.dump_stacks):
    the problem names where it hung, not only its last log lines."""
    out = ('[INFO] [client.motion_table]: loopback-only DDS\n'
           'Current thread 0x00007f (most recent call first):\n'
           '  File "/x/rclpy/executors.py", line 740 in _wait_for_ready_callbacks\n'
           '  File "/x/hil_common/ros_main.py", line 120 in run_node\n')
    summary = run(LiveReport(LiveExpectations()), out, -9)
    assert not summary['ok']
    text = '\n'.join(summary['problems'])
    assert 'failed (exit -9)' in text and '_wait_for_ready_callbacks' in text and 'run_node' in text
