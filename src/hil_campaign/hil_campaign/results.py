"""A campaign's results: the journal of finished runs and the Parquet table.

* ``journal.jsonl`` -- one JSON line per finished run, appended and flushed as each result
  arrives, so an interrupted campaign (Ctrl-C, a killed client) loses no finished run. It
  also keeps what the table leaves out because it differs from one execution to the next
  (wall time, worker address, traceback). A rerun reads it and does only the missing runs.
* ``results.parquet`` -- one row per run of the campaign, sorted by (point, iteration):
  ``point, iteration, run_id``, the parameters, ``seed``, the metrics, ``status`` (``ok`` or
  ``failed``), ``error`` and ``code_version``. Written from the journal, so the same campaign
  file gives the same table whether it ran in one go or in pieces.

Plain Python, no rclpy.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any, Iterable

JOURNAL = 'journal.jsonl'
TABLE = 'results.parquet'


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``git describe --always --dirty --tags`` of the source tree this module runs from, or the
    package version when it is not a git checkout (an installed image)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(['git', '--no-optional-locks', '-C', str(here), 'describe', '--always', '--dirty', '--tags'],
                             capture_output=True, text=True, timeout=10.0)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f'hil_campaign {version("hil_campaign")}'
    except PackageNotFoundError:
        return 'unknown'


class Journal:
    """Append-only record of finished runs (see the module docstring)."""

    def __init__(self, path: Path, fresh: bool = False):
        self.path = Path(path)
        if fresh and self.path.exists():
            self.path.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open('rb+') as f:          # a line cut by a kill: end it, so the next one parses
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b'\n':
                    f.write(b'\n')

    def rows(self) -> dict[str, dict]:
        """Finished runs by run id (the last line wins); runs lost to the engine are left out (to redo)."""
        out: dict[str, dict] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue                       # a line cut by a kill: that run is redone
            if isinstance(row, dict) and 'run_id' in row:
                if row.get('engine_error'):
                    out.pop(row['run_id'], None)
                else:
                    out[row['run_id']] = row
        return out

    def append(self, row: dict) -> None:
        with self.path.open('a') as f:
            f.write(json.dumps(row) + '\n')
            f.flush()
            os.fsync(f.fileno())


def _column(values: list):
    """A pyarrow array: booleans stay booleans, numbers become float64, anything else a string."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, type=pa.bool_())
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    return pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values],
                    type=pa.string())


def build_table(rows: Iterable[dict], parameters: list[str], metrics: list[str], metadata: dict | None = None):
    """The campaign table (see the module docstring) from journal rows."""
    import pyarrow as pa

    rows = sorted(rows, key=lambda r: (r['point'], r['iteration']))
    columns = {
        'point': pa.array([r['point'] for r in rows], type=pa.int64()),
        'iteration': pa.array([r['iteration'] for r in rows], type=pa.int64()),
        'run_id': pa.array([r['run_id'] for r in rows], type=pa.string()),
    }
    for name in parameters:
        columns[name] = _column([r['params'].get(name) for r in rows])
    columns['seed'] = pa.array([r['seed'] for r in rows], type=pa.int64())
    for name in metrics:
        columns[name] = _column([(r.get('metrics') or {}).get(name) for r in rows])
    columns['status'] = pa.array([r['status'] for r in rows], type=pa.string())
    columns['error'] = pa.array([r.get('error') for r in rows], type=pa.string())
    columns['code_version'] = pa.array([r.get('code_version') for r in rows], type=pa.string())
    table = pa.table(columns)
    if metadata:
        table = table.replace_schema_metadata({k: json.dumps(v) for k, v in metadata.items()})
    return table


def write_table(table, path: Path) -> Path:
    import pyarrow.parquet as pq

    tmp = Path(path).with_suffix('.parquet.tmp')
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return Path(path)


def read_table(path: Path):
    import pyarrow.parquet as pq

    return pq.read_table(path)


def finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and not isinstance(v, bool) and isinstance(v, (int, float))
            and math.isfinite(float(v))]


def json_safe(value: Any) -> Any:
    """NaN and infinities as None (strict JSON for summary.json)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
