"""rosbag2 bags in MCAP storage, named as ROS names them and written to survive a crash.

A bag is a folder ``<name>/`` holding ``<name>_0.mcap`` and ``metadata.yaml``, as
``ros2 bag record -o <name> -s mcap`` makes it; ``ros2 bag``, ``rosbags`` and Foxglove read it.
:class:`BagWriter` takes serialised (CDR) messages, so it needs no rclpy
(:mod:`hil_bringup.recorder` adds the rclpy side). What a crash (kill -9 of the recorder, or
of the machine) can cost is bounded:

* the MCAP header and ``metadata.yaml`` (the topics known so far, their types and counts)
  are on disk as soon as the bag is opened; ``metadata.yaml`` is rewritten (atomically) at
  every flush;
* messages go into small chunks (``chunk_size``); every ``flush_period_s`` the open chunk is
  closed and written with the schemas and channels its messages need, the file is flushed
  to the kernel and, with ``fsync``, to the disk. So a crash loses at most the messages of
  the last flush period;
* :func:`recover` (the ``hil_bag_recover`` command) rebuilds a complete, indexed bag from a
  truncated one: every whole chunk is kept, a torn one at the end is dropped.

The MCAP file (profile ``ros2``, schemas in ``ros2msg``, messages in ``cdr``) is written by
:class:`McapFile`, record by record after the MCAP specification, because the reference
Python writer costs tens of microseconds per message; on close it gets its summary, index
and the ``rosbag2`` metadata record, as rosbag2's MCAP storage plugin writes them. The
reference ``mcap`` reader (and ``rosbags``) read it back in the tests; recovery reads with
the reference ``mcap`` stream reader.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml
from hil_common.errors import StartError

BAG_VERSION = 9
ROS_DISTRO = 'jazzy'
METADATA = 'metadata.yaml'


class BagError(StartError):
    """A bag cannot be written or recovered; the message names the path."""


def bag_file(bag: Path, index: int = 0) -> Path:
    """``<bag>/<bag name>_<index>.mcap``, the name rosbag2 gives the files of a bag."""
    bag = Path(bag)
    return bag / f'{bag.name}_{index}.mcap'


@dataclass
class Topic:
    """One topic of a bag (an MCAP channel and its schema)."""

    name: str
    type: str                      # package/msg/Type
    msgdef: str                    # the ros2msg (or ros2idl) definition, dependencies included
    encoding: str = 'ros2msg'
    rihs01: str = ''
    qos: list = ()                 # offered_qos_profiles as rosbag2 writes them (list of dicts)
    channel_id: int = 0
    count: int = 0


def _metadata(topics, files: list[str], start_ns: int | None, end_ns: int | None, custom: dict | None = None) -> dict:
    start = start_ns or 0
    duration = max(0, (end_ns or 0) - start) if start_ns is not None else 0
    count = sum(t.count for t in topics)
    return {'rosbag2_bagfile_information': {
        'version': BAG_VERSION,
        'storage_identifier': 'mcap',
        'relative_file_paths': list(files),
        'duration': {'nanoseconds': duration},
        'starting_time': {'nanoseconds_since_epoch': start},
        'message_count': count,
        'topics_with_message_count': [
            {'topic_metadata': {'name': t.name, 'type': t.type, 'serialization_format': 'cdr',
                                'offered_qos_profiles': list(t.qos), 'type_description_hash': t.rihs01},
             'message_count': t.count}
            for t in topics],
        'compression_format': '',
        'compression_mode': '',
        'files': [{'path': f, 'starting_time': {'nanoseconds_since_epoch': start},
                   'duration': {'nanoseconds': duration}, 'message_count': count} for f in files],
        'custom_data': custom or None,
        'ros_distro': ROS_DISTRO,
    }}


#: libyaml's emitter where PyYAML has it: the same text as the pure-Python one (the Envisat graph's metadata.yaml,
#: 21 kB: 6.7 against 37.5 ms of CPU), and a recorder writes it at each flush (twice a second)
_DUMPER = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)


def _dump(data, stream=None, **options):
    """``yaml.safe_dump`` through :data:`_DUMPER`."""
    return yaml.dump(data, stream, Dumper=_DUMPER, **options)


def _qos_text(qos) -> str:
    return _dump(list(qos), default_flow_style=False, sort_keys=False) if qos else ''


def _qos_list(channel_metadata) -> list:
    try:
        value = yaml.safe_load(channel_metadata.get('offered_qos_profiles', '') or '[]')
    except yaml.YAMLError:
        return []
    return value if isinstance(value, list) else []


def write_metadata(bag: Path, metadata: dict, fsync: bool = False) -> None:
    """Write ``<bag>/metadata.yaml`` atomically (a reader never sees half a file)."""
    path = Path(bag) / METADATA
    tmp = path.with_suffix('.yaml.tmp')
    with open(tmp, 'w') as f:
        _dump(metadata, f, default_flow_style=False, sort_keys=False)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


MAGIC = b'\x89MCAP0\r\n'
_U8, _U16, _U32, _U64 = (struct.Struct(f) for f in ('<B', '<H', '<I', '<Q'))
_RECORD = struct.Struct('<BQ')                  # opcode, content length
_MESSAGE = struct.Struct('<BQHIQQ')            # record head + channel id, sequence, log time, publish time
_INDEX_ENTRY = struct.Struct('<QQ')


def _string(text: str) -> bytes:
    raw = text.encode()
    return _U32.pack(len(raw)) + raw


def _map(entries: dict, key=_string, value=_string) -> bytes:
    body = b''.join(key(k) + value(v) for k, v in entries.items())
    return _U32.pack(len(body)) + body


def _record(opcode: int, content: bytes) -> bytes:
    return _RECORD.pack(opcode, len(content)) + content


class McapFile:
    """A chunked, indexed MCAP file written record by record (MCAP spec, https://mcap.dev/spec).

    Schemas and channels are written into the data section as soon as they are added, so a
    reader of a torn file has them before any message that needs them; messages go into a
    chunk that :meth:`close_chunk` writes (with its message indexes) when it is full or on
    demand. :meth:`finish` writes the summary (schemas, channels, chunk indexes, statistics,
    metadata index), the summary offsets and the footer. The per-message path is one
    ``struct.pack`` into the open chunk: a recorder at several kHz spends microseconds.
    """

    def __init__(self, stream, profile: str = 'ros2', library: str = 'hil_bringup.bag', chunk_size: int = 256 * 1024,
                 compression: str = ''):
        if compression not in ('', 'zstd', 'lz4'):
            raise BagError(f"compression must be '', 'zstd' or 'lz4', got {compression!r}")
        self.stream = stream
        self.chunk_size = chunk_size
        self.compression = compression
        self.schemas: dict[int, bytes] = {}
        self.channels: dict[int, bytes] = {}
        self.chunk_indexes: list[bytes] = []
        self.metadata_indexes: list[bytes] = []
        self.channel_counts: dict[int, int] = {}
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self._chunk = bytearray()
        self._index: dict[int, list[tuple[int, int]]] = {}
        self._chunk_start = self._chunk_end = 0
        stream.write(MAGIC + _record(0x01, _string(profile) + _string(library)))

    def add_schema(self, schema_id: int, name: str, encoding: str, data: bytes) -> None:
        rec = _record(0x03, _U16.pack(schema_id) + _string(name) + _string(encoding) + _U32.pack(len(data)) + data)
        self.schemas[schema_id] = rec
        self.stream.write(rec)

    def add_channel(self, channel_id: int, schema_id: int, topic: str, message_encoding: str, metadata: dict) -> None:
        rec = _record(0x04, _U16.pack(channel_id) + _U16.pack(schema_id) + _string(topic) + _string(message_encoding)
                      + _map(metadata))
        self.channels[channel_id] = rec
        self.channel_counts.setdefault(channel_id, 0)
        self.stream.write(rec)

    def add_message(self, channel_id: int, sequence: int, log_time: int, publish_time: int, data: bytes) -> None:
        chunk = self._chunk
        if not chunk:
            self._chunk_start = self._chunk_end = log_time
        elif log_time < self._chunk_start:
            self._chunk_start = log_time
        elif log_time > self._chunk_end:
            self._chunk_end = log_time
        index = self._index.get(channel_id)
        if index is None:
            index = self._index[channel_id] = []
        index.append((log_time, len(chunk)))
        chunk += _MESSAGE.pack(0x05, 22 + len(data), channel_id, sequence & 0xFFFFFFFF, log_time, publish_time)
        chunk += data
        self.channel_counts[channel_id] = self.channel_counts.get(channel_id, 0) + 1
        if len(chunk) >= self.chunk_size:
            self.close_chunk()

    def close_chunk(self) -> None:
        """Write the open chunk and its message indexes (nothing if it holds no message)."""
        if not self._chunk:
            return
        raw = bytes(self._chunk)
        if self.compression == 'zstd':
            import zstandard
            data = zstandard.ZstdCompressor().compress(raw)
        elif self.compression == 'lz4':
            import lz4.frame
            data = lz4.frame.compress(raw)
        else:
            data = raw
        start, end = self._chunk_start, self._chunk_end
        self.start_ns = start if self.start_ns is None else min(self.start_ns, start)
        self.end_ns = end if self.end_ns is None else max(self.end_ns, end)
        chunk = _record(0x06, _U64.pack(start) + _U64.pack(end) + _U64.pack(len(raw)) + _U32.pack(zlib.crc32(raw))
                        + _string(self.compression) + _U64.pack(len(data)) + data)
        chunk_offset = self.stream.tell()
        indexes = bytearray()
        offsets = {}
        for cid, entries in self._index.items():
            offsets[cid] = chunk_offset + len(chunk) + len(indexes)
            body = b''.join(_INDEX_ENTRY.pack(t, o) for t, o in entries)
            indexes += _record(0x07, _U16.pack(cid) + _U32.pack(len(body)) + body)
        self.stream.write(chunk + indexes)
        self.chunk_indexes.append(_record(0x08, _U64.pack(start) + _U64.pack(end) + _U64.pack(chunk_offset)
                                          + _U64.pack(len(chunk)) + _map(offsets, _U16.pack, _U64.pack)
                                          + _U64.pack(len(indexes)) + _string(self.compression)
                                          + _U64.pack(len(data)) + _U64.pack(len(raw))))
        self._chunk = bytearray()
        self._index = {}

    def add_metadata(self, name: str, entries: dict) -> None:
        self.close_chunk()
        offset = self.stream.tell()
        rec = _record(0x0C, _string(name) + _map(entries))
        self.stream.write(rec)
        self.metadata_indexes.append(_record(0x0D, _U64.pack(offset) + _U64.pack(len(rec)) + _string(name)))

    def finish(self) -> None:
        self.close_chunk()
        self.stream.write(_record(0x0F, _U32.pack(0)))
        summary_start = self.stream.tell()
        groups = []
        for opcode, records in ((0x03, self.schemas.values()), (0x04, self.channels.values()),
                                (0x08, self.chunk_indexes), (0x0D, self.metadata_indexes)):
            body = b''.join(records)
            if body:
                groups.append((opcode, self.stream.tell(), len(body)))
                self.stream.write(body)
        stats = (_U64.pack(sum(self.channel_counts.values())) + _U16.pack(len(self.schemas))
                 + _U32.pack(len(self.channels)) + _U32.pack(0) + _U32.pack(len(self.metadata_indexes))
                 + _U32.pack(len(self.chunk_indexes)) + _U64.pack(self.start_ns or 0) + _U64.pack(self.end_ns or 0)
                 + _map(self.channel_counts, _U16.pack, _U64.pack))
        groups.append((0x0B, self.stream.tell(), len(stats) + 9))
        self.stream.write(_record(0x0B, stats))
        summary_offset_start = self.stream.tell()
        for opcode, start, length in groups:
            self.stream.write(_record(0x0E, _U8.pack(opcode) + _U64.pack(start) + _U64.pack(length)))
        self.stream.write(_record(0x02, _U64.pack(summary_start) + _U64.pack(summary_offset_start) + _U32.pack(0))
                          + MAGIC)


class BagWriter:
    """A rosbag2 bag (one MCAP file) written from serialised messages, crash-safe (module doc)."""

    def __init__(self, path: Path, *, overwrite: bool = False, chunk_size: int = 256 * 1024,
                 flush_period_s: float = 0.5, fsync: bool = True, compression: str = '',
                 clock: Callable[[], float] = time.monotonic, library: str = 'hil_bringup.bag'):
        self.path = Path(path)
        if self.path.suffix == '.mcap':
            raise BagError(f'{self.path}: a bag is a folder, name it without .mcap (rosbag2 writes '
                           f'{bag_file(self.path.with_suffix(""))})')
        if self.path.exists():
            if not overwrite:
                raise BagError(f'{self.path} exists already, not overwriting')
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)
        if flush_period_s <= 0.0:
            raise BagError(f'flush_period_s must be > 0, got {flush_period_s}')
        self.file = bag_file(self.path)
        self.flush_period_s = flush_period_s
        self.fsync = fsync
        self.clock = clock
        self.topics: dict[str, Topic] = {}
        self._schemas: dict[str, int] = {}
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.closed = False
        self._metadata_written: tuple | None = None
        self._stream = open(self.file, 'wb')
        self._mcap = McapFile(self._stream, 'ros2', library, chunk_size, compression)
        self.flush()

    # -- writing ----------------------------------------------------------------------------
    def add_topic(self, name: str, type_name: str, msgdef: str, *, encoding: str = 'ros2msg', rihs01: str = '',
                  qos: list = ()) -> Topic:
        """Register a topic (its schema once per type); returns the existing one if already added."""
        topic = self.topics.get(name)
        if topic is not None:
            if topic.type != type_name:
                raise BagError(f'{self.path}: topic {name} is recorded as {topic.type}, got {type_name}')
            return topic
        schema_id = self._schemas.get(type_name)
        if schema_id is None:
            schema_id = self._schemas[type_name] = len(self._schemas) + 1
            self._mcap.add_schema(schema_id, type_name, encoding, msgdef.encode())
        channel_id = len(self.topics) + 1
        self._mcap.add_channel(channel_id, schema_id, name, 'cdr', {'offered_qos_profiles': _qos_text(qos)})
        topic = Topic(name, type_name, msgdef, encoding, rihs01, list(qos), channel_id)
        self.topics[name] = topic
        return topic

    def write(self, topic: Topic, t_ns: int, data: bytes, publish_time_ns: int | None = None) -> None:
        """Write one serialised message received at ``t_ns``; flushes when a flush period has passed."""
        t_ns = int(t_ns)
        self._mcap.add_message(topic.channel_id, topic.count, t_ns,
                               t_ns if publish_time_ns is None else int(publish_time_ns), data)
        topic.count += 1
        self.start_ns = t_ns if self.start_ns is None else min(self.start_ns, t_ns)
        self.end_ns = t_ns if self.end_ns is None else max(self.end_ns, t_ns)
        if self.clock() - self._last_flush >= self.flush_period_s:
            self.flush()

    def flush(self) -> None:
        """Close the open chunk, write it and ``metadata.yaml``, push both to the kernel (and disk)."""
        self._mcap.close_chunk()
        self._stream.flush()
        if self.fsync:
            os.fsync(self._stream.fileno())
        self._write_metadata()
        self._last_flush = self.clock()

    def flush_if_due(self) -> None:
        """For a timer: flush if a flush period has passed since the last one (an idle bag too)."""
        if not self.closed and self.clock() - self._last_flush >= self.flush_period_s:
            self.flush()

    def metadata(self) -> dict:
        return _metadata(self.topics.values(), [self.file.name], self.start_ns, self.end_ns)

    def _write_metadata(self) -> None:
        state = tuple((t.name, t.count) for t in self.topics.values())
        if state != self._metadata_written:
            write_metadata(self.path, self.metadata(), self.fsync)
            self._metadata_written = state

    def counts(self) -> dict[str, int]:
        return {t.name: t.count for t in self.topics.values()}

    def close(self) -> dict[str, int]:
        """Finalise the MCAP file (summary, index, rosbag2 metadata record) and metadata.yaml."""
        if not self.closed:
            info = self.metadata()
            self._mcap.add_metadata('rosbag2', {
                'serialized_metadata': _dump(info['rosbag2_bagfile_information'], sort_keys=False),
                'ROS_DISTRO': ROS_DISTRO})
            self._mcap.finish()
            self._stream.flush()
            if self.fsync:
                os.fsync(self._stream.fileno())
            self._stream.close()
            self._metadata_written = None
            self._write_metadata()
            self.closed = True
        return self.counts()


# --------------------------------------------------------------------------------- recovery

def _is_complete(path: Path) -> bool:
    from mcap.reader import make_reader

    try:
        with open(path, 'rb') as f:
            return make_reader(f).get_summary() is not None
    except Exception:  # noqa: BLE001 - any failure to read the footer/summary means "not complete"
        return False


def scan(path: Path):
    """Read what an MCAP file holds, stopping at the first torn or corrupt record.

    Returns ``(schemas, channels, messages, good_bytes, file_bytes)``: ``messages`` is a list of
    ``(channel_id, log_time, publish_time, data)`` in file order; every chunk whose CRC fails is
    skipped.
    """
    from mcap.records import Channel, Chunk, Message, Schema
    from mcap.stream_reader import StreamReader, breakup_chunk

    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    messages: list = []
    size = path.stat().st_size
    good = 0
    with open(path, 'rb') as f:
        reader = StreamReader(f, emit_chunks=True, record_size_limit=size)
        records = reader.records
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - the torn tail of a crashed recording
                break
            good = f.tell()
            inner = [record]
            if isinstance(record, Chunk):
                try:
                    inner = breakup_chunk(record, validate_crc=True)
                except Exception:  # noqa: BLE001 - a corrupt chunk is dropped, the next may be whole
                    continue
            for r in inner:
                if isinstance(r, Schema):
                    schemas[r.id] = r
                elif isinstance(r, Channel):
                    channels[r.id] = r
                elif isinstance(r, Message):
                    messages.append((r.channel_id, r.log_time, r.publish_time, r.data))
    return schemas, channels, messages, good, size


def recover(bag: Path, output: Path | None = None) -> dict:
    """Rebuild a readable bag (complete MCAP files and metadata.yaml) from a truncated one.

    ``bag`` is a bag folder (or one of its ``.mcap`` files). With no ``output`` the bag is
    repaired in place and a damaged file is kept beside it as ``<file>.damaged``. Returns
    ``{'files': ..., 'counts': {topic: n}, 'dropped_bytes': n, 'complete': bool}``.
    """
    bag = Path(bag)
    if bag.suffix == '.mcap' and bag.is_file():
        bag = bag.parent
    files = sorted(bag.glob('*.mcap'), key=lambda p: (len(p.name), p.name))
    if not files:
        raise BagError(f'{bag}: no .mcap file to recover')
    in_place = output is None
    out = bag if in_place else Path(output)
    if not in_place:
        if out.exists():
            raise BagError(f'{out} exists already, not overwriting')
        out.mkdir(parents=True)
    if len(files) == 1 and _is_complete(files[0]) and in_place:
        # Only metadata.yaml may be missing or stale: rebuild it from the file's own summary.
        schemas, channels, messages, good, size = scan(files[0])
        topics, start, end = _topics_of(schemas, channels, messages)
        write_metadata(bag, _metadata(topics, [files[0].name], start, end))
        return {'files': [files[0].name], 'counts': {t.name: t.count for t in topics}, 'dropped_bytes': 0,
                'complete': True}
    # Everything is rewritten into one new file named after the output bag.
    target = bag_file(out)
    tmp = target.with_name(target.name + '.recovering')
    topics_all: dict[str, Topic] = {}
    dropped = 0
    with open(tmp, 'wb') as stream:
        writer = McapFile(stream, 'ros2', 'hil_bag_recover', 1024 * 1024)
        schema_ids: dict[str, int] = {}
        for path in files:
            schemas, channels, messages, good, size = scan(path)
            dropped += size - good
            channel_map = {}
            for cid, ch in channels.items():
                schema = schemas.get(ch.schema_id)
                type_name = schema.name if schema else ''
                topic = topics_all.get(ch.topic)
                if topic is None:
                    sid = schema_ids.get(type_name, 0)
                    if not sid and schema is not None:
                        sid = schema_ids[type_name] = len(schema_ids) + 1
                        writer.add_schema(sid, schema.name, schema.encoding, schema.data)
                    new_id = len(topics_all) + 1
                    writer.add_channel(new_id, sid, ch.topic, ch.message_encoding, dict(ch.metadata))
                    topic = Topic(ch.topic, type_name, schema.data.decode() if schema else '',
                                  schema.encoding if schema else '', '', _qos_list(ch.metadata), new_id)
                    topics_all[ch.topic] = topic
                channel_map[cid] = topic
            for cid, log_time, publish_time, data in messages:
                topic = channel_map.get(cid)
                if topic is None:
                    continue              # its channel record was lost with a torn chunk
                writer.add_message(topic.channel_id, topic.count, log_time, publish_time, data)
                topic.count += 1
        info = _metadata(topics_all.values(), [target.name], writer.start_ns, writer.end_ns)
        writer.add_metadata('rosbag2', {'serialized_metadata': _dump(info['rosbag2_bagfile_information'],
                                                                             sort_keys=False),
                                        'ROS_DISTRO': ROS_DISTRO})
        writer.finish()
        stream.flush()
        os.fsync(stream.fileno())
    if in_place:
        for path in files:
            os.replace(path, path.with_name(path.name + '.damaged'))
    os.replace(tmp, target)
    write_metadata(out, info, fsync=True)
    return {'files': [target.name], 'counts': {t.name: t.count for t in topics_all.values()},
            'dropped_bytes': dropped, 'complete': False}


def _topics_of(schemas, channels, messages):
    topics = {}
    for cid, ch in channels.items():
        schema = schemas.get(ch.schema_id)
        topics[cid] = Topic(ch.topic, schema.name if schema else '', schema.data.decode() if schema else '',
                            schema.encoding if schema else '', '', _qos_list(ch.metadata), cid)
    start = end = None
    for cid, log_time, _, _ in messages:
        if cid in topics:
            topics[cid].count += 1
            start = log_time if start is None else min(start, log_time)
            end = log_time if end is None else max(end, log_time)
    return list(topics.values()), start, end


def main(argv=None) -> int:
    """``hil_bag_recover BAG [-o OUT]``: rebuild a readable bag from a truncated one."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog='hil_bag_recover',
        description='Rebuild a readable rosbag2 bag (MCAP storage, with metadata.yaml) from one whose recorder '
                    'or machine crashed. Whole chunks are kept, a torn tail is dropped. Without -o the bag is '
                    'repaired in place and the damaged file kept as <file>.damaged.')
    parser.add_argument('bag', type=Path, help='the bag folder (or its .mcap file)')
    parser.add_argument('-o', '--output', type=Path, default=None, help='write the recovered bag to this new folder')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        result = recover(args.bag, args.output)
    except (BagError, OSError) as exc:
        print(f'hil_bag_recover: {exc}', file=sys.stderr)
        return 1
    where = args.output or args.bag
    total = sum(result['counts'].values())
    state = 'was complete; metadata.yaml rewritten' if result['complete'] else \
        f"recovered, {result['dropped_bytes']} bytes of torn tail dropped"
    print(f'{where}: {state}; {total} messages on {len(result["counts"])} topics')
    for name, n in sorted(result['counts'].items()):
        print(f'  {name}: {n}')
    return 0
