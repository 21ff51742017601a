#!/usr/bin/env bash
echo "[check-network] not implemented yet" >&2
