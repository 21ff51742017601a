from setuptools import find_packages, setup

PACKAGE = 'hil_docking'


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/scenarios', ['scenarios/cisas_docking.yaml']),
        ('share/' + PACKAGE + '/urdf', ['urdf/cisas.urdf']),
        ('share/' + PACKAGE + '/launch', ['launch/cisas_docking.launch.py']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='HIL stack maintainers',
    maintainer_email='hil-dev@example.invalid',
    description='Rendezvous and docking on a small robotic facility (seed 003): CW relative motion, virtual-force contact compensation, delay-stability designer, CISAS arm and its feed-forward control variants.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'docking_designer = hil_docking.designer_cli:main',
            'docking_demo = hil_docking.demo:main',
            'docking_facility_node = hil_docking.docking_facility_node:main',
            'facility_emulator_node = hil_docking.facility_emulator_node:main',
            'mockup_pose_node = hil_docking.mockup_pose_node:main',
        ],
    },
)
