from setuptools import find_packages, setup

PACKAGE = 'hil_motion_table'


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Motion-table node: streams commanded poses to serial or parallel (hexapod) robots through ros2_control controller topics.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'motion_table_node = hil_motion_table.motion_table_node:main',
        ],
    },
)
