"""RDT codec: golden bytes written from the protocol layout, round trips, status bits,
sequence accounting with wrap-around, calibration page."""

import random
import struct

import pytest

from hil_sensors import rdt
from hil_sensors.rdt_sim import RdtSimulator

# ----------------------------------------------------------------------------- requests


@pytest.mark.parametrize('command, count, golden', [
    (rdt.CMD_STOP, 0, '1234' '0000' '00000000'),
    (rdt.CMD_START_REALTIME, 0, '1234' '0002' '00000000'),
    (rdt.CMD_START_BUFFERED, 0, '1234' '0003' '00000000'),
    (rdt.CMD_SET_HARDWARE_BIAS, 0, '1234' '0042' '00000000'),
    (rdt.CMD_START_REALTIME, 1000, '1234' '0002' '000003e8'),
    (rdt.CMD_START_BUFFERED, 0xFFFFFFFF, '1234' '0003' 'ffffffff'),
])
def test_request_golden_bytes_and_round_trip(command, count, golden):
    data = rdt.encode_request(command, count)
    assert data == bytes.fromhex(golden)
    assert len(data) == 8
    req = rdt.decode_request(data)
    assert (req.header, req.command, req.sample_count) == (0x1234, command, count)


def test_request_rejects_bad_input():
    with pytest.raises(ValueError):
        rdt.encode_request(0x0001)
    with pytest.raises(ValueError):
        rdt.encode_request(rdt.CMD_STOP, -1)
    with pytest.raises(rdt.RdtFormatError, match='8 bytes'):
        rdt.decode_request(bytes.fromhex('1234000200000000') + b'\0')
    with pytest.raises(rdt.RdtFormatError, match='header'):
        rdt.decode_request(bytes.fromhex('4321000200000000'))
    with pytest.raises(rdt.RdtFormatError, match='unknown command'):
        rdt.decode_request(bytes.fromhex('1234000500000000'))


# ----------------------------------------------------------------------------- records

GOLDEN_RECORD = bytes.fromhex(
    '00000001'   # rdt_sequence 1
    '0000002a'   # ft_sequence 42
    '80020000'   # status: error summary + saturation
    '00000001'   # Fx 1
    'ffffffff'   # Fy -1
    '000f4240'   # Fz 1,000,000
    '80000000'   # Tx int32 min
    '7fffffff'   # Ty int32 max
    'fffe7960')  # Tz -100,000


def test_record_golden_bytes():
    rec = rdt.RdtRecord(1, 42, 0x80020000, (1, -1, 1_000_000, -2**31, 2**31 - 1, -100_000))
    assert len(GOLDEN_RECORD) == 36
    assert rdt.encode_record(rec) == GOLDEN_RECORD
    assert rdt.decode_packet(GOLDEN_RECORD) == [rec]
    assert list(rdt.iter_raw_records(GOLDEN_RECORD)) == [(1, 42, 0x80020000, 1, -1, 1_000_000, -2**31, 2**31 - 1,
                                                          -100_000)]


def test_record_round_trip_random_and_buffered():
    rng = random.Random(4)
    for n in (1, 2, 10, 40, rdt.MAX_RECORDS_PER_PACKET):
        records = [rdt.RdtRecord(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32),
                                 tuple(rng.randint(-2**31, 2**31 - 1) for _ in range(6))) for _ in range(n)]
        data = rdt.encode_packet(records)
        assert len(data) == 36 * n
        assert rdt.decode_packet(data) == records
        # the layout, field by field, independently of the codec's struct
        for i, r in enumerate(records):
            chunk = data[36 * i:36 * (i + 1)]
            assert struct.unpack('>I', chunk[0:4])[0] == r.rdt_sequence
            assert struct.unpack('>I', chunk[4:8])[0] == r.ft_sequence
            assert struct.unpack('>I', chunk[8:12])[0] == r.status
            assert [struct.unpack('>i', chunk[12 + 4 * k:16 + 4 * k])[0] for k in range(6)] == list(r.counts)


@pytest.mark.parametrize('length', [0, 1, 8, 35, 37, 71, 73, 36 * (rdt.MAX_RECORDS_PER_PACKET + 1)])
def test_packet_wrong_length_is_rejected(length):
    with pytest.raises(rdt.RdtFormatError):
        rdt.decode_packet(b'\x01' * length)
    with pytest.raises(rdt.RdtFormatError):
        rdt.iter_raw_records(b'\x01' * length)


def test_saturate_int32():
    assert rdt.saturate_int32(1.4) == (1, False)
    assert rdt.saturate_int32(-2.6) == (-3, False)
    assert rdt.saturate_int32(3e9) == (2**31 - 1, True)
    assert rdt.saturate_int32(-3e9) == (-2**31, True)
    assert rdt.saturate_int32(float('nan')) == (0, True)
    assert rdt.saturate_int32(float('inf')) == (2**31 - 1, True)


# ----------------------------------------------------------------------------- status word

def test_status_bits_decoded_to_names():
    assert rdt.decode_status(0) == []
    assert rdt.status_is_healthy(0)
    assert rdt.decode_status(0x80020000) == ['error_summary', 'saturation']
    assert rdt.decode_status(0x80010000) == ['error_summary', 'monitor_condition']
    assert rdt.decode_status(1 << 15) == ['bit15']      # undocumented bit still reported
    assert rdt.decode_status(1) == ['bit0']
    everything = rdt.decode_status(0xFFFFFFFF)
    assert len(everything) == 32 and len(set(everything)) == 32


# ----------------------------------------------------------------------------- sequence accounting

def feed(tracker, seqs):
    return [tracker.observe(s) for s in seqs]


def test_sequence_in_order_gap_late_duplicate():
    t = rdt.SequenceTracker()
    kinds = feed(t, [1, 2, 3, 6, 4, 7, 7, 5, 8, 2])
    assert kinds == ['new', 'new', 'new', 'new', 'late', 'new', 'duplicate', 'late', 'new', 'duplicate']
    assert t.counters() == {'received': 10, 'lost': 0, 'out_of_order': 2, 'duplicates': 2, 'rejected': 0,
                            'resyncs': 0}


def test_sequence_wraps_around_2_to_32():
    t = rdt.SequenceTracker()
    start = 2**32 - 5
    seqs = [(start + i) & 0xFFFFFFFF for i in range(12)]  # ... 4294967295, 0, 1, ...
    dropped = {seqs[3], seqs[5]}                         # 4294967294 and 0
    sent = [s for s in seqs if s not in dropped]
    sent[5], sent[6] = sent[6], sent[5]                  # re-order across the wrap
    feed(t, sent)
    assert t.lost == 2
    assert t.out_of_order == 1
    assert t.duplicates == 0
    assert t.rejected == 0
    feed(t, [seqs[3]])                                   # a dropped one arrives very late
    assert (t.lost, t.out_of_order) == (1, 2)


def test_sequence_stray_datagram_does_not_spoil_counts_and_restart_resyncs():
    t = rdt.SequenceTracker(window=100, max_forward_gap=1000)
    feed(t, range(1, 51))
    assert t.observe(3_000_000_000) == 'rejected'         # one stray record far away
    assert t.observe(51) == 'new'                         # stream goes on, no false loss
    assert (t.lost, t.rejected) == (0, 1)
    # the sensor restarts (sequence back to 1): the first record is held, the second confirms
    assert t.observe(1) == 'duplicate'                    # within the window: looks like a duplicate
    t2 = rdt.SequenceTracker(window=100, max_forward_gap=1000)
    feed(t2, range(5000, 5100))
    assert feed(t2, [1, 2, 3, 4]) == ['rejected', 'rejected', 'resync', 'new']   # three in sequence confirm
    assert t2.counters() == {'received': 104, 'lost': 0, 'out_of_order': 0, 'duplicates': 0, 'rejected': 0,
                             'resyncs': 1}


def test_two_garbage_records_in_a_row_are_no_resync():
    """Issue 15: two consecutive garbage records (even in sequence with each other) are not data."""
    t = rdt.SequenceTracker(window=100, max_forward_gap=1000)
    feed(t, range(1, 51))
    assert feed(t, [3_000_000_000, 3_000_000_001]) == ['rejected', 'rejected']
    assert feed(t, [51, 52]) == ['new', 'new']
    assert (t.lost, t.rejected, t.resyncs) == (0, 2, 0)


def test_forward_jumps_bounded_by_the_elapsed_time():
    """With arrival times, a jump the stream could not have made at rate_hz is no loss but a candidate."""
    period = 1_000_000                                   # 1 kHz
    t = rdt.SequenceTracker(rate_hz=1000.0)
    for k in range(100):
        assert t.observe(1 + k, k * period) == 'new'
    assert t.observe(100 + 500_000, 100 * period) == 'rejected'     # 0.5 million ahead after 0.1 s
    assert t.observe(102, 101 * period) == 'new' and t.lost == 1   # one genuinely lost (101)
    assert t.observe(102 + 300, 400 * period) == 'new' and t.lost == 300   # an outage of 0.3 s: plausible


def test_sequence_large_gap_counted_and_window_bounded():
    t = rdt.SequenceTracker(window=64, max_forward_gap=10_000)
    feed(t, [1, 5001])
    assert t.lost == 4999
    assert len(t._missing) <= 64
    assert t.observe(5000) == 'late'
    assert t.lost == 4998


# ----------------------------------------------------------------------------- calibration

def test_calibration_units_and_scales():
    c = rdt.Calibration(1_000_000, 1_000_000)
    assert c.scales() == (1e-6,) * 3 + (1e-6,) * 3
    c = rdt.Calibration(1000, 10, 'kN', 'N-mm')
    assert c.newton_per_count == pytest.approx(1.0)
    assert c.newton_metre_per_count == pytest.approx(1e-4)
    c = rdt.Calibration(1, 1, 'lbf', 'lbf-in')
    assert c.newton_per_count == pytest.approx(4.4482216152605)
    assert c.newton_metre_per_count == pytest.approx(0.1129848290276167)
    assert c.to_si([1, 2, 3, 4, 5, 6]) == pytest.approx([4.448, 8.896, 13.345, 0.452, 0.565, 0.678], rel=1e-3)
    with pytest.raises(rdt.CalibrationError, match='force unit'):
        rdt.Calibration(1, 1, 'furlong', 'Nm')
    with pytest.raises(rdt.CalibrationError, match='counts_per_force'):
        rdt.Calibration(0, 1)


def test_parse_calibration_page():
    page = b'''<?xml version="1.0" encoding="utf-8"?>
    <netft><setserial>FT12345</setserial><cfgnam>SI-660-60</cfgnam>
    <cfgcpf>1000000</cfgcpf><cfgcpt>1000000</cfgcpt><scfgfu>N</scfgfu><scfgtu>Nm</scfgtu>
    <comrdtrate>7000</comrdtrate></netft>'''
    c = rdt.parse_calibration_xml(page)
    assert (c.counts_per_force, c.counts_per_torque, c.force_unit, c.torque_unit) == (1e6, 1e6, 'N', 'Nm')
    with pytest.raises(rdt.CalibrationError, match='missing'):
        rdt.parse_calibration_xml('<netft><cfgcpf>1</cfgcpf></netft>')
    with pytest.raises(rdt.CalibrationError, match='not valid XML'):
        rdt.parse_calibration_xml('<netft>')
    with pytest.raises(rdt.CalibrationError, match='torque unit'):
        rdt.parse_calibration_xml('<netft><cfgcpf>1</cfgcpf><cfgcpt>1</cfgcpt><scfgfu>N</scfgfu>'
                                  '<scfgtu>parsec</scfgtu></netft>')


def test_fetch_calibration_from_simulated_sensor_page():
    cal = rdt.Calibration(1000, 10, 'kN', 'N-mm')
    with RdtSimulator(calibration=cal, http_port=0) as sim:
        got = rdt.fetch_calibration('127.0.0.1', sim.http_port, timeout_s=2.0)
    assert (got.counts_per_force, got.counts_per_torque, got.force_unit, got.torque_unit) == (1000, 10, 'kN', 'N-mm')
    assert got.source == f'http://127.0.0.1:{sim.http_port}/netftapi2.xml'
    with pytest.raises(rdt.CalibrationError, match='cannot read'):
        rdt.fetch_calibration('127.0.0.1', sim.http_port, timeout_s=0.5)   # server gone
