"""Minimal PNG and animated PNG (APNG) writers (RGB, 8 bit) on zlib: no image library needed.

An APNG plays as a video in web browsers and most image viewers; viewers without APNG
support show its first frame (PNG specification, APNG extension: acTL/fcTL/fdAT chunks).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from hil_common.errors import InputError


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack('>I', len(payload)) + kind + payload + struct.pack('>I', zlib.crc32(kind + payload) & 0xFFFFFFFF)


SIGNATURE = b'\x89PNG\r\n\x1a\n'


def _scanlines(rgb: np.ndarray) -> tuple[int, int, bytes]:
    image = np.ascontiguousarray(rgb, dtype=np.uint8)
    if image.ndim != 3 or image.shape[2] != 3:
        raise InputError(f'expected an HxWx3 image, got {image.shape}')
    height, width, _ = image.shape
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), image.reshape(height, width * 3)], axis=1)
    return width, height, zlib.compress(rows.tobytes(), 6)


def _header(width: int, height: int) -> bytes:
    return _chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0))


def encode_png(rgb: np.ndarray) -> bytes:
    width, height, data = _scanlines(rgb)
    return SIGNATURE + _header(width, height) + _chunk(b'IDAT', data) + _chunk(b'IEND', b'')


def encode_apng(frames, fps: float = 25.0) -> bytes:
    """An animated PNG of equally sized RGB frames, looping forever."""
    frames = list(frames)
    if not frames:
        raise InputError('an animation needs at least one frame')
    delay = max(1, int(round(1000.0 / fps)))
    parts, sequence = [], 0
    width = height = None
    for k, frame in enumerate(frames):
        w, h, data = _scanlines(frame)
        if k == 0:
            width, height = w, h
            parts += [_header(w, h), _chunk(b'acTL', struct.pack('>II', len(frames), 0))]
        elif (w, h) != (width, height):
            raise InputError('all frames must have the same size')
        parts.append(_chunk(b'fcTL', struct.pack('>IIIIIHHBB', sequence, w, h, 0, 0, delay, 1000, 0, 0)))
        sequence += 1
        if k == 0:
            parts.append(_chunk(b'IDAT', data))
        else:
            parts.append(_chunk(b'fdAT', struct.pack('>I', sequence) + data))
            sequence += 1
    return SIGNATURE + b''.join(parts) + _chunk(b'IEND', b'')


def write_png(path, rgb: np.ndarray) -> None:
    with open(path, 'wb') as handle:
        handle.write(encode_png(rgb))


def write_apng(path, frames, fps: float = 25.0) -> None:
    with open(path, 'wb') as handle:
        handle.write(encode_apng(frames, fps))
