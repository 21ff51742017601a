import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'hil_bringup'


def _share_tree(folder):
    """data_files entries installing every file below `folder` into share/<package>/folder."""
    entries = {}
    for path in glob(os.path.join(folder, '**', '*'), recursive=True):
        if os.path.isfile(path) and '__pycache__' not in path:
            target = os.path.join('share', PACKAGE, os.path.dirname(path))
            entries.setdefault(target, []).append(path)
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        *_share_tree('launch'),
        *_share_tree('config'),
        *_share_tree('scenarios'),
        *_share_tree('facilities'),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Launch files, mission scenarios and the demo entry points of the HIL stack.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'hil_demo = hil_bringup.demo:main',
            'client_hot_path_node = hil_bringup.client_hot_path_node:main',
            'servicer_hot_path_node = hil_bringup.servicer_hot_path_node:main',
            'scripted_wrench_node = hil_bringup.scripted_wrench_node:main',
            'teleop_demo = hil_bringup.teleop_demo:main',
            'hil_bag_recover = hil_bringup.bag:main',
            'recorder_node = hil_bringup.recorder_node:main',
            'wait_for_ready = hil_bringup.wait_for_ready:main',
            'live_view_node = hil_bringup.live_view_node:main',
        ],
    },
)
