"""The teleoperation scenario YAML (``hil_bringup/scenarios/massive_payload_teleop.yaml``).

:func:`load_teleop_scenario` reads it with :class:`hil_common.fields.Fields` (errors name the
field) into a :class:`TeleopScenario`: the lockstep :class:`TeleopConfig`, the scripted
operator pulls, and :meth:`TeleopScenario.node_parameters` for the launch file, so the YAML
is the single source of truth for the lockstep runner, the demo and the ROS graph.
Plain Python, no rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hil_common.fields import Fields, ScenarioError
from hil_teleop.gains import TeleopGains
from hil_teleop.config import TeleopConfig
from hil_teleop.master import ScriptedOperator

X = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])


@dataclass
class TwinGraphSettings:
    """YAML section ``lab_twin``: the real-time ROS graph with the MuJoCo lab twin (``sim:=true``).

    Over DDS the loop's delays are tens of ms (more on a loaded machine), against ~20 ms in the
    lockstep runner: the grip there is softer so that the force-feedback loop gain ``K_s K`` and the
    delay's negative damping ``K tau`` of the payload mode stay small (see docs/teleop.md).
    """

    grip_k: tuple = (2e3, 2e3, 2e3, 2e2, 2e2, 2e2)
    grip_d: tuple = (2e2, 2e2, 2e2, 2e1, 2e1, 2e1)
    rate_hz: float = 250.0
    payload_ft_cutoff_hz: float = 10.0
    payload_trajectory_lead_s: float = 0.02


@dataclass
class TeleopScenario:
    name: str
    config: TeleopConfig
    pulls: list            # [(start_s, end_s, v_ref_mps)] along x
    ramp_s: float
    settle_s: float
    graph: 'TwinGraphSettings' = None

    def __post_init__(self):
        if self.graph is None:
            self.graph = TwinGraphSettings()

    def operator(self, gains: TeleopGains | None = None) -> ScriptedOperator:
        gains = gains or self.config.gains
        return ScriptedOperator.velocity_steps([(a, b, v * X) for a, b, v in self.pulls], gains.k_s, gains.g,
                                               ramp_s=self.ramp_s)

    def duration_s(self) -> float:
        return max(b for _, b, _ in self.pulls) + self.config.delay_s + self.settle_s

    def node_parameters(self) -> dict:
        """Parameters of the nodes of ``massive_payload_teleop.launch.py``, by node name."""
        c, g = self.config, self.config.gains
        gains = {'k_s': g.k_s.tolist(), 'g': g.g.tolist(), 'k_c': g.k_c.tolist(), 'd': g.d.tolist(),
                 'enable_force_feedback': g.force_feedback, 'enable_coupling': g.coupling,
                 'enable_damping': g.damping, 'enable_scaling': g.scaling}
        rate = 1.0 / c.dt
        flat = []
        for push in self.operator().pushes:
            flat += [push.start_s, push.end_s, *[float(v) for v in push.force]]
        inertia = np.diag(c.payload_inertia()).reshape(-1)
        virtual_inertia = np.diag(c.payload_inertia(c.virtual_mass_factor)).reshape(-1)
        return {
            'teleop_master': {**gains, 'source': 'scripted', 'scripted_pushes': flat, 'scripted_ramp_s': self.ramp_s,
                              'payload_mass_kg': c.payload_mass_kg * c.virtual_mass_factor,
                              'payload_inertia_kgm2': virtual_inertia.tolist(),
                              'contact_k_t': list(c.virtual_contact_k), 'contact_d_t': list(c.virtual_contact_d),
                              'x0': list(c.x_grip_0), 'rate_hz': rate},
            'delay_line': {'uplink_delay_s': c.delay_s, 'downlink_delay_s': c.delay_s, 'jitter_s': c.jitter_s,
                           'drop_probability': c.drop_probability, 'seed': c.seed},
            'slave_law': {**gains, 'delay_s': c.delay_s, 'command_timeout_s': c.command_timeout_s, 'rate_hz': rate,
                          'x_s0': list(c.x_grip_0), 'ft_frame': 'base'},
            # orbit physics in simulation: the grip between slave and payload (slave F/T in base axes)
            'grip_contact': {'x_grip_0': list(c.x_grip_0), 'contact_k': list(c.grip_contact_k),
                             'contact_d': list(c.grip_contact_d), 'rate_hz': rate},
            # the payload in the loop: the client admittance with a zero nominal velocity
            'payload_admittance': {'mass_kg': c.payload_mass_kg, 'inertia_com_kgm2': inertia.tolist(),
                                   'twist_client_body_0': [0.0] * 6,
                                   'pose_sensor_in_client_xyz_rpy': [0.0] * 6, 'rate_hz': rate},
        }

    def twin_node_parameters(self, slave_rdt_port: int = 49152, payload_rdt_port: int = 49153,
                             rate_hz: float | None = None) -> dict:
        """Parameters of the graph with the MuJoCo lab twin (``massive_payload_teleop.launch.py sim:=true``).

        The nodes of :meth:`node_parameters` (without ``grip_contact``) plus ``lab_twin``
        (``layout:=teleop``: the KR 120 slave gripping the mock-up on the UR10e payload table, the
        grip compliance of the YAML's ``lab_twin`` section, F/T sensors served over RDT/UDP on
        127.0.0.1), one ``ft_sensor`` per sensor (tared at start) and one ``motion_table`` per
        robot. The slave law measures ``x_s``/``v_s`` on the slave's joint states; the virtual arm
        starts at that measured start (the grip point, axes parallel to the slave base), so
        ``x_grip_0`` of the YAML is replaced by it. ``rate_hz`` overrides ``lab_twin.rate_hz``, the
        control rate of the nodes.
        """
        from hil_lab_twin.scene import SENSOR_HEIGHT_M, GRAPPLE_IN_MOCKUP_M, teleop_facility_config
        from hil_motion_table.kinematics_helpers import make_kinematics
        from hil_teleop.slave_measurement import MeasuredSlave

        c, g = self.config, self.graph
        twin = teleop_facility_config()
        q_slave = dict((r.ns, r) for r in twin.robots)['slave'].q_initial
        x_s0 = MeasuredSlave.aligned_at(make_kinematics('kr120r2500pro'), q_slave,
                                        (0.0, 0.0, SENSOR_HEIGHT_M)).measure(q_slave, [0.0] * 6).x_s
        params = self.node_parameters()
        del params['grip_contact']
        rate = rate_hz or g.rate_hz
        params['teleop_master'].update(x0=[float(v) for v in x_s0], rate_hz=rate)
        params['slave_law'].update(x_s0=[float(v) for v in x_s0], rate_hz=rate, slave_robot='kr120r2500pro',
                                   ee_in_flange_xyz=[0.0, 0.0, SENSOR_HEIGHT_M], ft_frame='flange', ft_sign=-1.0,
                                   joint_states_timeout_s=0.5)
        # the payload CoM is the grapple (seed 001 grips the payload at its CoM), 0.27 m in front of the sensor
        params['payload_admittance'].update(pose_sensor_in_client_xyz_rpy=[0.0, 0.0, -GRAPPLE_IN_MOCKUP_M, 0.0, 0.0, 0.0],
                                            rate_hz=rate, wrench_timeout_s=0.5)
        period = 1.0 / rate
        # a loaded host can stall a process for a few hundred ms: the tables hold through a stall and
        # resume (no latching), and the F/T drivers tolerate it, instead of stopping the run for good
        table = {'output': 'joint_trajectory', 'trajectory_lead_s': period, 'period_s': period,
                 'joint_states_timeout_s': 1.0, 'latch_faults': False, 'prediction_horizon_s': 0.0}
        params['slave_table'] = {**table, 'robot': 'kr120r2500pro', 'command_frame': 'base'}
        params['payload_table'] = {**table, 'robot': 'ur10e', 'command_frame': 'home', 'home_from_start': True,
                                   'trajectory_lead_s': g.payload_trajectory_lead_s,
                                   'pose_body_in_flange_xyz_rpy': [0.0, 0.0, SENSOR_HEIGHT_M + GRAPPLE_IN_MOCKUP_M,
                                                                   0.0, 0.0, 0.0]}
        # the twin publishes (and, on its simulated clock, steps) at the control rate: each of its steps is
        # answered by one tick of the slave law and of the payload admittance (its barrier waits for both tables)
        params['lab_twin'] = {'layout': 'teleop', 'grip_stiffness': [float(v) for v in g.grip_k],
                              'grip_damping': [float(v) for v in g.grip_d], 'publish_rate_hz': min(rate, 1000.0),
                              'publish_wrench': False,
                              'rdt_ports': [f'slave_ft:{slave_rdt_port}', f'payload_ft:{payload_rdt_port}']}
        ft = {'sensor_ip': '127.0.0.1', 'sensor_rate_hz': 1000.0, 'publish_rate_hz': min(rate, 1000.0),
              'software_bias.on_start': True, 'low_pass.cutoff_hz': 50.0, 'stale_timeout_ms': 3000.0}
        params['slave_ft'] = {**ft, 'sensor_port': slave_rdt_port}
        params['payload_ft'] = {**ft, 'sensor_port': payload_rdt_port, 'low_pass.cutoff_hz': g.payload_ft_cutoff_hz}
        return params


def _pulls(f: Fields) -> list:
    raw = f.data.get('pulls')
    if not isinstance(raw, list) or not raw:
        raise f.error('pulls', 'expected a non-empty list of [start_s, end_s, v_ref_mps]')
    out = []
    for i, row in enumerate(raw):
        if not isinstance(row, list) or len(row) != 3 or \
                not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row):
            raise f.error('pulls', f'entry {i} must be [start_s, end_s, v_ref_mps], got {row!r}')
        if not row[1] > row[0]:
            raise f.error('pulls', f'entry {i}: end_s must be after start_s')
        out.append(tuple(float(v) for v in row))
    return out


#: The sections a teleop scenario may have; any other top-level key is refused by name.
TOP_LEVEL_KEYS = ('name', 'payload', 'link', 'gains', 'virtual_contact', 'slave', 'lab_twin', 'operator')


def load_teleop_scenario(path: str | Path) -> TeleopScenario:
    f = Fields.load(path)
    f.refuse_unknown(TOP_LEVEL_KEYS)
    payload, link, gains, contact, slave, op = (f.section(k) for k in
                                                ('payload', 'link', 'gains', 'virtual_contact', 'slave', 'operator'))

    def bool_field(sec: Fields, key: str) -> bool:
        v = sec.data.get(key, True)
        if not isinstance(v, bool):
            raise sec.error(key, f'expected true/false, got {v!r}')
        return v
    try:
        teleop_gains = TeleopGains(k_s=gains.vector('k_s', 6), g=gains.vector('g', 6), k_c=gains.vector('k_c', 6),
                                   d=gains.vector('d', 6), force_feedback=bool_field(gains, 'force_feedback'),
                                   coupling=bool_field(gains, 'coupling'), damping=bool_field(gains, 'damping'),
                                   scaling=bool_field(gains, 'scaling'))
    except ValueError as exc:
        raise ScenarioError(f"{f.source}: field 'gains.{str(exc).split(' ')[0]}': {exc}") from exc
    size = payload.vector('size_m', 3)
    if min(size) <= 0.0:
        raise payload.error('size_m', 'every side must be > 0')
    config = TeleopConfig(
        payload_mass_kg=payload.number('mass_kg', positive=True), payload_size_m=tuple(size),
        virtual_mass_factor=payload.number('virtual_mass_factor', 1.0, positive=True),
        gains=teleop_gains,
        virtual_contact_k=tuple(contact.vector('k_t', 6)), virtual_contact_d=tuple(contact.vector('d_t', 6)),
        grip_contact_k=tuple(slave.vector('grip_contact_k', 6)), grip_contact_d=tuple(slave.vector('grip_contact_d', 6)),
        arm_droop=tuple(slave.vector('arm_droop', 6)), arm_tau_s=slave.number('arm_tau_s', min=0.0),
        delay_s=link.number('delay_s', min=0.0), jitter_s=link.number('jitter_s', 0.0, min=0.0),
        drop_probability=link.number('drop_probability', 0.0, min=0.0, max=0.99),
        command_timeout_s=link.number('command_timeout_s', positive=True),
        dt=1.0 / slave.number('rate_hz', min=1.0, max=10000.0),
        x_grip_0=tuple(slave.vector('x_grip_0', 6)))
    graph = TwinGraphSettings()
    if 'lab_twin' in f.data:
        tw = f.section('lab_twin')
        graph = TwinGraphSettings(
            grip_k=tuple(tw.vector('grip_k', 6, graph.grip_k)), grip_d=tuple(tw.vector('grip_d', 6, graph.grip_d)),
            rate_hz=tw.number('rate_hz', graph.rate_hz, min=1.0, max=1000.0),
            payload_ft_cutoff_hz=tw.number('payload_ft_cutoff_hz', graph.payload_ft_cutoff_hz, positive=True, max=499.0),
            payload_trajectory_lead_s=tw.number('payload_trajectory_lead_s', graph.payload_trajectory_lead_s,
                                                positive=True, max=1.0))
        for key in ('grip_k', 'grip_d'):
            if min(getattr(graph, key)) < 0.0:
                raise tw.error(key, 'every value must be >= 0')
    return TeleopScenario(f.string('name', Path(path).stem), config, _pulls(op), op.number('ramp_s', 0.0, min=0.0),
                          op.number('settle_s', 10.0, min=0.0), graph)
