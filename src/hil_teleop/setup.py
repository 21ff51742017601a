from setuptools import find_packages, setup

PACKAGE = 'hil_teleop'


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
    description='Delayed force-motion teleoperation of a massive payload: delay line, virtual arm and payload, slave law (seed 001).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'teleop_master_node = hil_teleop.teleop_master_node:main',
            'delay_line_node = hil_teleop.delay_line_node:main',
            'slave_law_node = hil_teleop.slave_law_node:main',
            'grip_contact_node = hil_teleop.grip_contact_node:main',
        ],
    },
)
