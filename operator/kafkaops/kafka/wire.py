"""Kafka wire framing on kio's generated message types.

kio owns every field layout; this module only adds the 4-byte size prefix,
the request/response headers, and a version-tolerant way to build a message
from plain values (so one call site serves every version of an API). Both the
admin client and the in-repo fake cluster (a test double) use it, so the two
sides cannot disagree about framing.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import struct
import types
import typing
from collections.abc import Mapping
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from kafkaops.frozen import frozen

_SIZE = struct.Struct(">i")
_KEY_VERSION_CORR = struct.Struct(">hhi")


class FrameError(ValueError):
    """A frame that kio cannot decode (truncated, wrong version, garbage)."""


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


@functools.cache
def _field_plan(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """(name, nested entity class / ErrorCode / None, is_tuple) for each field of ``cls``."""
    plan = []
    for f in dataclasses.fields(cls):
        tp = _unwrap_optional(f.type)
        if typing.get_origin(tp) is tuple:
            inner = typing.get_args(tp)[0]
            plan.append((f.name, inner if dataclasses.is_dataclass(inner) else None, True))
        elif dataclasses.is_dataclass(tp):
            plan.append((f.name, tp, False))
        elif tp is ErrorCode:
            plan.append((f.name, ErrorCode, False))
        else:
            plan.append((f.name, None, False))
    return tuple(plan)


def build(cls: type, data: Mapping[str, Any]) -> Any:
    """Build a kio entity of ``cls`` from plain values.

    Keys the chosen version does not have are ignored, so callers describe a
    message once and it is encoded at whatever version was negotiated. Nested
    entities are given as mappings (or lists of mappings) and built with the
    nested class of that same version; error codes may be given as ints.
    """
    kwargs: dict[str, Any] = {}
    for name, nested, is_tuple in _field_plan(cls):
        if name not in data:
            continue
        value = data[name]
        if value is not None:
            if is_tuple:
                value = tuple(
                    build(nested, item) if nested is not None and isinstance(item, Mapping) else item
                    for item in value
                )
            elif nested is ErrorCode:
                value = ErrorCode(int(value))
            elif nested is not None and isinstance(value, Mapping):
                value = build(nested, value)
        kwargs[name] = value
    return cls(**kwargs)


def request_class(api_key: int, version: int) -> type:
    return load_request_schema(api_key, version)


def response_class(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)


def _frame(*parts: tuple[type, Any]) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    for cls, value in parts:
        entity_writer(cls)(buf, value)
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """A size-prefixed request frame (header version chosen by kio's schema)."""
    header_cls = request.__header_schema__
    header = header_cls(
        request_api_key=request.__api_key__,
        request_api_version=request.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    return _frame((header_cls, header), (type(request), request))


def peek_correlation_id(payload: bytes) -> int:
    """Every response header starts with the correlation id."""
    if len(payload) < 4:
        raise FrameError("response shorter than its header")
    return _SIZE.unpack_from(payload, 0)[0]


def decode_response(payload: bytes, api_key: int, version: int) -> Any:
    """Decode a response payload (without its size prefix)."""
    cls = response_class(api_key, version)
    try:
        _header, offset = entity_reader(cls.__header_schema__)(payload, 0)
        value, _size = entity_reader(cls)(payload, offset)
    except Exception as exc:  # kio raises several types for bad frames
        raise FrameError(f"cannot decode {cls.__name__}: {exc}") from exc
    return value


@frozen
class RequestFrame:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # a kio request entity, or None when the version is unknown to kio


def decode_request(payload: bytes) -> RequestFrame:
    """Server side: decode a request payload (without its size prefix)."""
    api_key, version, correlation_id = _KEY_VERSION_CORR.unpack_from(payload, 0)
    try:
        cls = request_class(api_key, version)
    except Exception:
        return RequestFrame(api_key, version, correlation_id, None, None)
    try:
        header, offset = entity_reader(cls.__header_schema__)(payload, 0)
        body, _size = entity_reader(cls)(payload, offset)
    except Exception as exc:
        raise FrameError(f"cannot decode {cls.__name__}: {exc}") from exc
    return RequestFrame(api_key, version, correlation_id, header.client_id, body)


def encode_response(response: Any, correlation_id: int) -> bytes:
    """Server side: a size-prefixed response frame."""
    header_cls = response.__header_schema__
    header = build(header_cls, {"correlation_id": correlation_id})
    return _frame((header_cls, header), (type(response), response))


def read_size(prefix: bytes) -> int:
    return _SIZE.unpack(prefix)[0]
