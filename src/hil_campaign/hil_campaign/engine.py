"""The campaign engine: Dask distributed runs the runs, the client keeps the journal.

* By default a :class:`distributed.LocalCluster` of worker *processes*, one thread each,
  as many as the CPUs this process may use (``workers=`` to choose); with
  ``scheduler='tcp://HOST:8786'`` the same campaign runs on an existing cluster
  (``dask scheduler`` and ``dask worker`` started by the lab, docs/campaigns.md). The
  workers import ``hil_campaign`` and the runners: they run in the same venv or image.
* Each run is one task, :func:`execute_run`: it never raises; a failing run returns its
  error and the campaign goes on. A worker that dies mid-run is Dask's business: the
  scheduler gives its tasks to the other workers.
* Results are journaled as they arrive (:class:`hil_campaign.results.Journal`); a rerun of
  the same campaign into the same folder submits only the runs the journal lacks. Ctrl-C
  cancels what is running and writes the table of what finished.
* A progress bar (tqdm) shows runs done, failed and the ETA.

Plain Python, no rclpy.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from hil_campaign.results import JOURNAL, TABLE, Journal, build_table, code_version, json_safe, write_table
from hil_campaign.spec import BisectionPlan, Campaign, RunSpec


def execute_run(payload: dict) -> dict:
    """Run one campaign run on a worker: ``{status, error, metrics, code_version, wall_s, worker}``.

    ``payload``: ``runner``, ``scenario`` (:class:`ScenarioSource`), ``overrides``, ``seed``.
    Never raises: an exception of the runner is the run's result (``status: failed``).
    """
    from hil_campaign.runners import get_runner

    t0 = time.perf_counter()
    out = {'code_version': code_version(), 'worker': f'{socket.gethostname()}:{os.getpid()}'}
    try:
        metrics = get_runner(payload['runner']).run(payload['scenario'], payload['overrides'], payload['seed'])
        out.update(status='ok', error=None, metrics=metrics)
    except Exception as exc:  # noqa: BLE001 - any failure of a run is recorded in its row
        out.update(status='failed', error=f'{type(exc).__name__}: {exc}', metrics={},
                   traceback=traceback.format_exc(limit=8))
    out['wall_s'] = time.perf_counter() - t0
    return out


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


@dataclass
class CampaignResult:
    campaign: Campaign
    out_dir: Path
    table_path: Path | None
    total: int                       # runs in the campaign (as far as it went)
    executed: int                    # runs executed by this invocation
    reused: int                      # runs taken from the journal
    failed: int
    interrupted: bool = False
    boundaries: list = field(default_factory=list)
    plots: list = field(default_factory=list)
    wall_s: float = 0.0


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C during a campaign; carries the partial :class:`CampaignResult`."""

    def __init__(self, result: CampaignResult):
        super().__init__('campaign interrupted')
        self.result = result


class CtrlC:
    """Ctrl-C remembered as well as raised, for the campaign loop (a context manager).

    Python runs a signal handler between bytecodes of the main thread, wherever it is. If that
    is a finalizer (a Dask future released by the garbage collector calls into the client's
    event loop), the ``KeyboardInterrupt`` is printed as "Exception ignored" and lost: the
    campaign would run to its end and exit 0. CI saw this once. The handler also sets
    :attr:`requested`, and :meth:`check` raises at the loop's next step. In another thread
    than the main one (no signals there) it does nothing.
    """

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self) -> 'CtrlC':
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handler(self, signum, frame) -> None:
        self.requested = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if Ctrl-C came, even if its first raise was swallowed."""
        if self.requested:
            raise KeyboardInterrupt


class _Engine:
    """A Dask client, started on first use (a fully journaled rerun starts no cluster)."""

    def __init__(self, scheduler: str | None, workers: int | None):
        self.scheduler, self.workers = scheduler, workers
        self.client = self.cluster = None

    def get(self):
        if self.client is None:
            from distributed import Client, LocalCluster

            if self.scheduler:
                self.client = Client(self.scheduler, timeout='30s')
            else:
                n = self.workers or available_cpus()
                # loopback only; no dashboard (its HTTP endpoint on an ephemeral port, not 8787)
                self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host='127.0.0.1',
                                            dashboard_address=None, scheduler_kwargs={'dashboard_address': '127.0.0.1:0'},
                                            silence_logs=logging.ERROR, preload=['hil_campaign.preload'])
                self.client = Client(self.cluster)
        return self.client

    def close(self):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _progress(total: int, desc: str, enabled: bool | None, file: TextIO | None):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit='run', disable=not enabled if enabled is not None else None,
                file=file if file is not None else sys.stderr, dynamic_ncols=True, smoothing=0.1)


def run_campaign(campaign: Campaign, out_dir: str | Path, scheduler: str | None = None, workers: int | None = None,
                 fresh: bool = False, progress: bool | None = None, progress_file: TextIO | None = None,
                 plots: bool = True) -> CampaignResult:
    """Run ``campaign`` into ``out_dir`` (journal, ``results.parquet``, ``summary.json``, plots).

    ``progress=None`` shows the bar on a terminal only. Raises :class:`CampaignInterrupted`
    on Ctrl-C after writing the table of the finished runs.
    """
    out_dir = Path(out_dir)
    journal = Journal(out_dir / JOURNAL, fresh=fresh)
    known = journal.rows()
    plan = campaign.plan()
    rows: dict[str, dict] = {}
    t0 = time.perf_counter()
    queue = deque(plan.initial())
    initial = sum(1 for s in queue if s.run_id in known) if not isinstance(plan, BisectionPlan) else 0
    bar = _progress(plan.total(), campaign.name, progress, progress_file)
    bar.update(initial)
    counts = {'executed': 0, 'reused': 0, 'failed': 0}
    engine = _Engine(scheduler, workers)
    pending = {}
    interrupted = False

    def record(spec: RunSpec, row: dict, fresh_run: bool) -> None:
        rows[spec.run_id] = row
        counts['executed' if fresh_run else 'reused'] += 1
        counts['failed'] += row['status'] != 'ok'
        if fresh_run or isinstance(plan, BisectionPlan):
            bar.update(1)
        bar.set_postfix_str(f"failed={counts['failed']} reused={counts['reused']}", refresh=False)
        queue.extend(plan.completed(spec, row))

    with CtrlC() as ctrl_c:
        try:
            from distributed import as_completed

            completed = None
            while queue or pending:
                ctrl_c.check()
                while queue:
                    spec = queue.popleft()
                    if spec.run_id in rows:
                        continue
                    if spec.run_id in known:          # its place in this plan (a grid may have been extended)
                        record(spec, {**known[spec.run_id], 'point': spec.point, 'iteration': spec.iteration},
                               fresh_run=False)
                        continue
                    payload = {'runner': campaign.runner, 'scenario': campaign.scenario,
                               'overrides': campaign.overrides_for(spec), 'seed': spec.seed}
                    # a fresh key per submission: a rerun never meets the tasks of an interrupted client
                    key = f'hil-run-{spec.run_id}-{uuid.uuid4().hex[:8]}'
                    future = engine.get().submit(execute_run, payload, key=key, pure=False)
                    pending[future.key] = (spec, future)
                    if completed is None:
                        completed = as_completed([future])
                    else:
                        completed.add(future)
                if not pending:
                    break
                future = next(completed)
                spec, _ = pending[future.key]
                base = {'run_id': spec.run_id, 'point': spec.point, 'iteration': spec.iteration,
                        'params': spec.params, 'seed': spec.seed}
                if future.status == 'finished':
                    row = {**base, **future.result()}
                else:                             # the engine lost the run (e.g. KilledWorker): redone on rerun
                    try:
                        exc = future.exception()
                    except BaseException as cancelled:  # noqa: BLE001 - a cancelled future raises instead
                        exc = cancelled
                    row = {**base, 'status': 'failed', 'error': f'{type(exc).__name__}: {exc}', 'metrics': {},
                           'code_version': None, 'engine_error': True}
                journal.append(row)
                record(spec, row, fresh_run=True)
                del pending[future.key]
        except KeyboardInterrupt:
            interrupted = True
            for _, future in pending.values():
                future.cancel()
            # a run journaled just before the interrupt, not yet recorded: the journal is authoritative
            journaled = journal.rows()
            for spec, _ in pending.values():
                if spec.run_id in journaled and spec.run_id not in rows:
                    rows[spec.run_id] = {**journaled[spec.run_id], 'point': spec.point,
                                         'iteration': spec.iteration}
                    counts['executed'] += 1
        finally:
            bar.close()
            engine.close()

    result = finish(campaign, out_dir, rows, plan, plots and not interrupted)
    result.executed, result.reused, result.interrupted = counts['executed'], counts['reused'], interrupted
    result.wall_s = time.perf_counter() - t0
    if interrupted:
        raise CampaignInterrupted(result)
    return result


def finish(campaign: Campaign, out_dir: Path, rows: dict, plan, plots: bool) -> CampaignResult:
    """Write the table, ``summary.json`` and the plots from the finished rows."""
    metadata = {'campaign': campaign.name, 'runner': campaign.runner, 'scenario': campaign.scenario.source,
                'seed': campaign.seed, 'overrides': campaign.overrides}
    table = build_table(rows.values(), campaign.parameter_names, campaign.metrics, metadata)
    table_path = write_table(table, out_dir / TABLE)
    failed = sum(1 for r in rows.values() if r['status'] != 'ok')
    boundaries = plan.boundaries() if isinstance(plan, BisectionPlan) else []
    result = CampaignResult(campaign, out_dir, table_path, len(rows), 0, 0, failed, boundaries=boundaries)
    if plots and rows:
        from hil_campaign.plots import write_plots

        result.plots = write_plots(campaign, table, boundaries, out_dir)
    summary = {'campaign': campaign.name, 'file': campaign.source, 'runner': campaign.runner,
               'scenario': campaign.scenario.source, 'runs': len(rows), 'failed': failed,
               'success': sum(1 for r in rows.values() if campaign.success(r)) if campaign.success else None,
               'code_versions': sorted({r.get('code_version') or '' for r in rows.values()}),
               'boundaries': boundaries, 'plots': [p.name for p in result.plots]}
    (out_dir / 'summary.json').write_text(json.dumps(json_safe(summary), indent=1))
    return result
