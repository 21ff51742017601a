"""The deterministic lockstep runners: the rule objects wired without DDS (plain Python, no rclpy).

A runner closes a mission's loop in one process, step by step on a simulated clock, with the
same rule objects the ROS nodes call, so regression tests, benchmarks, demos and campaigns
get the same numbers every time and faster than real time. The ROS graph of the same
mission is defined once in :mod:`hil_bringup.graphs`; this package is the other way to run it.

====================================  ==================================================================
module                                what it runs
====================================  ==================================================================
:mod:`.client`                        the Envisat client alone (seed 004 §III-A): the relative
                                      admittance beside the absolute formulation, a push in orbit
                                      (:func:`~.client.run_client` -> :class:`~.client.ClientRun`)
:mod:`.mission`                       the Envisat capture with ideal robots (seed 004 Fig. 7,
                                      :class:`~.mission.HilMission`) and its absolute reference
                                      ("GNCDE", :class:`~.mission.AbsoluteMission`); ``run`` ->
                                      :class:`~.mission.MissionRecord`
:mod:`.twin_validation`               the Envisat loop through the MuJoCo twin's lockstep mode: F/T
                                      processing, motion tables, the twin's robots and arm (seed 004
                                      §V, Figs. 8-9, :func:`~.twin_validation.run_unforced_validation`)
:mod:`.twin_capture`                  the capture closed through the twin's physical contact
                                      (:class:`~.twin_capture.TwinCaptureMission`)
:mod:`.teleop`                        seed 001's delayed teleoperation with ideal slave and payload
                                      (:func:`~.teleop.run_teleop` -> ``hil_teleop.config.TeleopRun``)
:mod:`.teleop_twin`                   the same with the MuJoCo lab twin as the lab
                                      (:func:`~.teleop_twin.run_teleop_twin`, the same record)
:mod:`.teleop_experiments`            seed 001's experiments as teleop runs (step pulls, HILS 2) and
                                      their agreement metric (:func:`~.teleop_experiments.hils2_agreement`)
``hil_snare.runner``                  seeds 000 and 002, the snare-wire captures (``run`` -> ``Trace``,
                                      judged by ``capture_outcome``)
``hil_docking.mission``               seed 003, the CISAS docking mission (``run_mission`` ->
                                      ``MissionRun``)
====================================  ==================================================================

The last two stay in their mission packages: those packages depend on hil_bringup (for their
graphs, the graph runner, the recorder), so hil_bringup cannot import them without a cycle;
:mod:`hil_campaign.runners`, which depends on every package, reaches them all the same way.

**The common interface** is the one :mod:`hil_campaign.runners` adapts: *scenario in, record
and metrics out*. Each runner here takes a loaded scenario (``hil_bringup.scenario.MissionScenario``
for the Envisat runners; for teleop the ``TeleopConfig`` and scripted operator of
``hil_teleop.scenario.TeleopScenario``) plus a duration and a record decimation, and returns its
own record (``ClientRun``, ``MissionRecord``, ``TeleopRun``, the twin validation's dict of
records and comparisons). A :class:`hil_campaign.runners.Runner` adapter loads the scenario with
overrides applied, calls the runner, and reduces the record to a flat dict of metrics:
``Runner.run(scenario, overrides, seed) -> metrics`` and ``Runner.run_with_record(...) ->
(metrics, record)``. The per-mission metric functions stay next to what they measure
(``hil_campaign.envisat.capture_metrics``, :func:`~.teleop_experiments.hils2_agreement`,
``hil_teleop.config.mse``, :func:`~.mission.compare_relative_pose`).

**Components that are not runners, and stay with their packages:**

* ``hil_dynamics.servicer_lockstep`` (``ServicerHilLockstep``, ``GroundArmOnMovingBase``): the
  servicer's HIL loop step, admittance (Eq. 18), torque law (Eq. 22) and the simulated ground
  arm (Eq. 20) integrated together with the compiled (Numba) kernels of
  ``hil_dynamics.kernels``. It is a rule-level component with a ``step``, no scenario, record or
  metrics; it is tested against its reference form in hil_dynamics, and :mod:`.mission` uses it.
* ``hil_lab_twin.lockstep`` (``TableInTheLoop``, ``response_delay``): the twin side's
  table-in-the-loop coupling, a motion table driving one of the twin's robots exactly as the
  motion-table node publishes. The twin runners here, :mod:`hil_bringup.graphs` (the tables'
  prediction horizon) and hil_lab_twin itself (snapshots, its tests) use it; hil_lab_twin
  cannot import hil_bringup.

This ``__init__`` imports nothing: importing one runner loads only what it needs
(Pinocchio for all, MuJoCo for the twin runners).
"""
