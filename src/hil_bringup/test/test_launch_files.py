"""Launch files are checked statically (launch/launch_ros are not installable here).

Every ``Node(package=..., executable=...)`` in hil_bringup/launch must name an executable
that exists where launch_ros looks for it, ``<prefix>/lib/<package>/<executable>``, and
every launch file must define ``generate_launch_description``.
"""

import ast
import os
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_prefix, get_package_share_directory

LAUNCH_DIR = Path(__file__).resolve().parents[1] / 'launch'
LAUNCH_FILES = sorted(LAUNCH_DIR.glob('*.launch.py'))


def node_actions(tree):
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, 'id', None) == 'Node':
            kwargs = {k.arg: k.value for k in call.keywords}
            yield kwargs['package'].value, kwargs['executable'].value


def test_there_are_launch_files_and_they_are_installed():
    assert LAUNCH_FILES
    share = Path(get_package_share_directory('hil_bringup')) / 'launch'
    for path in LAUNCH_FILES:
        assert (share / path.name).read_text() == path.read_text(), f'{path.name} is not installed (run ./dev setup)'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_nodes_resolve_like_launch_ros(path):
    tree = ast.parse(path.read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description' for n in tree.body)
    nodes = list(node_actions(tree))
    assert nodes, 'no Node actions'
    for package, executable in nodes:
        exe = Path(get_package_prefix(package)) / 'lib' / package / executable
        assert exe.is_file() and os.access(exe, os.X_OK), f'{package}/{executable} not found at {exe}'
