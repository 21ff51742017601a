"""Loopback-only DDS by default; a lab opts in to its real network explicitly.

Fast DDS multicasts discovery out of every network interface unless told otherwise.
Every process of this stack therefore runs under the profile
``config/fastdds_loopback.xml`` of this package: a UDPv4 transport whitelisted to
127.0.0.1 plus shared memory, with the built-in transports switched off.

* Jazzy's Fast DDS 2.14 reads the profile from ``FASTRTPS_DEFAULT_PROFILES_FILE``.
  ``FASTDDS_DEFAULT_PROFILES_FILE`` and ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` alone
  do not stop the multicast, so we never rely on them.
* ``HIL_NETWORK=lab`` is the documented switch for a lab that wants DDS on its real
  network: the environment is then left exactly as the lab set it (its own profile,
  domain id, discovery range).

The functions here only touch environment variables. They must run before the first
DDS participant is created (``rclpy.init``), which is why every node's ``main`` calls
:func:`apply_network_profile` first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import MutableMapping
from hil_common.errors import ConfigError

PROFILE_ENV = 'FASTRTPS_DEFAULT_PROFILES_FILE'
MODE_ENV = 'HIL_NETWORK'
PROFILE_FILENAME = 'fastdds_loopback.xml'
MODES = ('loopback', 'lab')


class NetworkConfigError(ConfigError, RuntimeError):
    """The network mode or profile is not usable."""


def loopback_profile_path() -> Path:
    """Return the installed loopback-only Fast DDS profile.

    Looks in the package's share directory (colcon install or our venv), then next to
    the source tree (editable checkout).
    """
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory('hil_common')) / 'config' / PROFILE_FILENAME)
    except Exception:  # noqa: BLE001 - ament index missing or package not indexed
        pass
    candidates.append(Path(__file__).resolve().parents[1] / 'config' / PROFILE_FILENAME)
    for path in candidates:
        if path.is_file():
            return path
    raise NetworkConfigError(
        f'loopback-only DDS profile {PROFILE_FILENAME} not found (looked in: '
        + ', '.join(str(p) for p in candidates) + '); reinstall hil_common')


def network_mode(env: MutableMapping[str, str] | None = None) -> str:
    """Return 'loopback' (default) or 'lab' from ``HIL_NETWORK``."""
    env = os.environ if env is None else env
    mode = env.get(MODE_ENV, 'loopback').strip().lower() or 'loopback'
    if mode not in MODES:
        raise NetworkConfigError(f'{MODE_ENV}={mode!r} is not one of {MODES}')
    return mode


def apply_network_profile(env: MutableMapping[str, str] | None = None) -> str:
    """Put the loopback-only profile into ``env`` (default: this process) unless in lab mode.

    Returns the mode applied. In loopback mode the profile is forced even when another
    profile file was set, because a stray profile could re-enable multicast; a lab that
    wants its own profile sets ``HIL_NETWORK=lab``.
    """
    env = os.environ if env is None else env
    mode = network_mode(env)
    if mode == 'loopback':
        env[PROFILE_ENV] = str(loopback_profile_path())
        env.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    return mode


def describe(env: MutableMapping[str, str] | None = None) -> str:
    """One line for start-up logs: which network the process uses."""
    env = os.environ if env is None else env
    mode = network_mode(env)
    if mode == 'lab':
        return f'{MODE_ENV}=lab: DDS uses the lab network as configured ({PROFILE_ENV}={env.get(PROFILE_ENV, "<unset>")})'
    return f'loopback-only DDS ({PROFILE_ENV}={env.get(PROFILE_ENV)}), ROS_DOMAIN_ID={env.get("ROS_DOMAIN_ID", "0")}'


def free_udp_ports(n: int, host: str = '127.0.0.1') -> list[int]:
    """``n`` distinct UDP ports on ``host`` that are free right now (for RDT servers in demos and tests,
    so that two runs on one machine do not cross)."""
    import socket

    socks, ports = [], []
    try:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((host, 0))
            socks.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in socks:
            sock.close()
    return ports


#: Fast DDS maps domains to UDP ports 7400 + 250 * domain; the demos keep well inside the valid range.
DEMO_DOMAIN_RANGE = (1, 100)


def demo_domain_id(env: MutableMapping[str, str] | None = None) -> int:
    """The ROS domain of a demo run: ``ROS_DOMAIN_ID`` if the user set one, else a random one in
    :data:`DEMO_DOMAIN_RANGE`, written into ``env`` so the nodes the demo starts inherit it (two
    demos on one host then do not cross)."""
    import random

    env = os.environ if env is None else env
    if env.get('ROS_DOMAIN_ID'):
        return int(env['ROS_DOMAIN_ID'])
    domain = random.SystemRandom().randint(*DEMO_DOMAIN_RANGE)
    env['ROS_DOMAIN_ID'] = str(domain)
    return domain
