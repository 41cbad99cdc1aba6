"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded to JSON objects.

kubectl sends typed built-in objects as protobuf (`kubectl create namespace`, `create secret`,
`create configmap`, ...) and does not fall back to JSON on a 415, so the emulator decodes them.
The envelope is the 4 bytes `k8s\\x00` then a `runtime.Unknown` message (typeMeta {apiVersion,
kind}, raw, contentEncoding, contentType); `raw` is the kind's message in the protobuf wire format.
The message tables (`protobuf_messages.json`) are generated from Kubernetes' public
`generated.proto` files by `protobuf_gen.py`, for the kinds the emulator stores.

JSON mapping, as the Go types marshal: proto field names are the JSON names; `Time` is RFC 3339,
`IntOrString` an int or a string, `Quantity` a string, `bytes` base64, `RawExtension` and
`FieldsV1` embedded JSON. Go's `omitempty` cannot be read from a .proto, so empty strings, empty
messages, empty lists and maps, and zero times are dropped (kubectl never means them); `false`
and `0` are kept.

Responses stay JSON: kubectl accepts `application/json` as its second choice.
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from functools import cache
from pathlib import Path
from typing import Any

from . import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
TIME = {META + "Time", META + "MicroTime"}
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
RAW_JSON = {"k8s.io.apimachinery.pkg.runtime.RawExtension", META + "FieldsV1"}
DURATION = META + "Duration"
SIGNED = {"int32", "int64"}


@cache
def tables() -> dict[str, Any]:
    return json.loads(Path(__file__).with_name("protobuf_messages.json").read_text("utf-8"))


class DecodeError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise DecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (field number, wire type, value) triples of one message: ints for varints and fixed, bytes else."""
    found, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<Q", data, pos)[0], pos + 8
        elif wire == 5:
            value, pos = struct.unpack_from("<I", data, pos)[0], pos + 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise DecodeError("truncated field")
            value, pos = data[pos:pos + length], pos + length
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        found.append((number, wire, value))
    return found


def _scalar(type_: str, wire: int, value: Any) -> Any:
    if type_ == "string":
        return bytes(value).decode("utf-8")
    if type_ == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if type_ == "bool":
        return bool(value)
    if type_ in ("double", "float"):
        return struct.unpack("<d", struct.pack("<Q", value))[0] if wire == 1 else \
            struct.unpack("<f", struct.pack("<I", value))[0]
    if type_ in SIGNED and value >= 1 << 63:
        return value - (1 << 64)
    return value


def _packed(type_: str, data: bytes) -> list[Any]:
    values, pos = [], 0
    while pos < len(data):
        value, pos = _varint(data, pos)
        values.append(_scalar(type_, 0, value))
    return values


def _special(type_: str, data: bytes) -> Any:
    parts = {number: value for number, _, value in fields(data)}
    if type_ in TIME:
        seconds, nanos = parts.get(1, 0), parts.get(2, 0)
        if not seconds and not nanos:
            return None
        when = datetime.datetime.fromtimestamp(_scalar("int64", 0, seconds), datetime.UTC)
        if type_.endswith("MicroTime"):
            return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if type_ == INT_OR_STRING:
        return bytes(parts.get(3, b"")).decode() if parts.get(1) == 1 else _scalar("int32", 0, parts.get(2, 0))
    if type_ == QUANTITY:
        return bytes(parts.get(1, b"")).decode()
    if type_ in RAW_JSON:
        raw = bytes(parts.get(1, b""))
        return json.loads(raw) if raw else None
    if type_ == DURATION:
        return f"{_scalar('int64', 0, parts.get(1, 0)) / 1e9:g}s"
    raise KeyError(type_)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


def decode_message(type_: str, data: bytes) -> Any:
    """One message as its JSON value."""
    if type_ in TIME or type_ in (INT_OR_STRING, QUANTITY, DURATION) or type_ in RAW_JSON:
        return _special(type_, data)
    schema = tables()["messages"].get(type_)
    if schema is None:
        raise DecodeError(f"no protobuf table for {type_}")
    result: dict[str, Any] = {}
    for number, wire, value in fields(data):
        spec = schema.get(str(number))
        if spec is None:
            continue  # a field newer than the tables: skipped, as an old server would
        name, label, field_type, _ = spec
        if label == "map":
            entry = {n: v for n, _, v in fields(value)}
            key = _scalar("string", 2, entry.get(1, b""))
            raw = entry.get(2, b"" if field_type in ("string", "bytes") or "." in field_type else 0)
            item = decode_message(field_type, raw) if "." in field_type else _scalar(field_type, 2, raw)
            result.setdefault(name, {})[key] = item
        elif "." in field_type:
            item = decode_message(field_type, value)
            if label == "repeated":
                result.setdefault(name, []).append(item)
            elif not _empty(item):
                result[name] = item
        elif label == "repeated" and wire == 2 and field_type not in ("string", "bytes"):
            result.setdefault(name, []).extend(_packed(field_type, value))
        elif label == "repeated":
            result.setdefault(name, []).append(_scalar(field_type, wire, value))
        else:
            item = _scalar(field_type, wire, value)
            if item != "":
                result[name] = item
    return {key: value for key, value in result.items() if not _empty(value)}


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object (envelope and all) as the JSON object it stands for; 400 if unreadable."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the body of the request is not a Kubernetes protobuf object (no k8s\\x00 prefix)")
    try:
        unknown = {number: value for number, _, value in fields(body[len(MAGIC):])}
        type_meta = {number: bytes(value).decode() for number, _, value in fields(unknown.get(1, b""))}
        api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
        if unknown.get(3):
            raise DecodeError(f"content encoding {bytes(unknown[3]).decode()!r} is not supported")
        message = tables()["kinds"].get(f"{api_version}/{kind}")
        if message is None:
            raise errors.unsupported_media_type(MEDIA_TYPE, f"protobuf is not served for {api_version} {kind}; "
                                                            f"send application/json")
        obj = decode_message(message, bytes(unknown.get(2, b"")))
    except (DecodeError, UnicodeDecodeError, struct.error, ValueError) as exc:
        raise errors.bad_request(f"the protobuf body of the request could not be decoded: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
