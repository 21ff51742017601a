"""Consistency checks of an ament_python package, shared by every package's test/.

``check_ament_python_package(package_dir)`` asserts what colcon and our venv rely on:
package.xml (format 3, ament_python build type) names the package; setup.py uses the
same name; setup.cfg puts scripts in ``$base/lib/<package>`` (where launch_ros looks);
the ``resource/<package>`` marker exists and is installed into the ament index of the
active prefix; every console script is installed in ``<prefix>/lib/<package>/``.
It also checks that every import of another ROS package or of a rosdep-keyed Python
library in the package's modules is declared in package.xml, so that ``rosdep install``
and ``colcon build`` on a lab machine get everything, and that ``hil_dynamics`` style
rule packages (``rules_only=True``) never import rclpy.
Returns the parsed facts for further checks.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path


# Python import name -> the package.xml key that provides it.
ROSDEP_KEYS = {'numpy': 'python3-numpy', 'scipy': 'python3-scipy', 'yaml': 'python3-yaml', 'pinocchio': 'pinocchio',
               'matplotlib': 'python3-matplotlib', 'rclpy': 'rclpy', 'ament_index_python': 'ament_index_python'}


def imported_packages(module_dir: Path) -> dict[str, set[str]]:
    """Top-level names imported by the modules below ``module_dir`` -> the files importing them."""
    found: dict[str, set[str]] = {}
    for path in module_dir.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                found.setdefault(n.split('.')[0], set()).add(path.name)
    return found


def check_ament_python_package(package_dir: Path, rules_only: bool = False) -> dict:
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    package_dir = Path(package_dir)
    name = package_dir.name
    root = ET.parse(package_dir / 'package.xml').getroot()
    assert root.get('format') == '3', 'package.xml must be format 3'
    assert root.findtext('name') == name, f"package.xml names {root.findtext('name')!r}, folder is {name!r}"
    assert root.findtext('export/build_type') == 'ament_python'
    setup_py = (package_dir / 'setup.py').read_text()
    assert re.search(rf"PACKAGE = '{name}'", setup_py), 'setup.py must use the package name'
    cfg = configparser.ConfigParser()
    cfg.read(package_dir / 'setup.cfg')
    assert cfg.get('develop', 'script_dir') == f'$base/lib/{name}'
    assert cfg.get('install', 'install_scripts') == f'$base/lib/{name}'
    assert (package_dir / 'resource' / name).is_file(), 'resource marker missing'
    share = Path(get_package_share_directory(name))
    assert (share / 'package.xml').read_text() == (package_dir / 'package.xml').read_text(), 'installed package.xml is stale'
    scripts = re.findall(r"'(\w+) = [\w.]+:\w+'", setup_py)
    lib = Path(get_package_prefix(name)) / 'lib' / name
    for script in scripts:
        assert os.access(lib / script, os.X_OK), f'{script} is not installed in {lib}'
    depends = {e.text for e in root if e.tag in ('depend', 'exec_depend', 'build_depend')}
    imports = imported_packages(package_dir / name)
    missing = []
    for module, files in sorted(imports.items()):
        key = ROSDEP_KEYS.get(module)
        if key is None and (module.startswith('hil_') or module.endswith('_msgs') or module == 'std_srvs'):
            key = module
        if key and module != name and key not in depends:
            missing.append(f'{key} (imported by {", ".join(sorted(files))})')
    assert not missing, f'{name}/package.xml does not declare: ' + '; '.join(missing)
    if rules_only:
        assert 'rclpy' not in imports, f'{name} is a rules package but imports rclpy in {sorted(imports["rclpy"])}'
    return {'name': name, 'scripts': scripts, 'depends': depends}
