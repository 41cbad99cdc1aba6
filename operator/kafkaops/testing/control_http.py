"""A small JSON-over-HTTP control endpoint on 127.0.0.1 for the test doubles' fault hooks.

The fake Kafka cluster (`kafkaops dev-cluster --control-port N`) and the Kubernetes API emulator
(`python -m kafkaops.testing.k8s_emulator --control-port N`) each serve one, so a soak scenario
(`bench/soak.py`) or a person with `curl` can inject faults into a running process
(docs/reliability.md lists the routes). Routes are `(method, path) -> handler(body) -> JSON`;
a handler raises `ControlError` for bad input, answered as 400 with the message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

Handler = Callable[[dict[str, Any], dict[str, str]], Awaitable[Any]]


class ControlError(ValueError):
    """Bad input to a control route: answered 400 with this message."""


class ControlServer:
    """Serves `routes` ({(METHOD, "/path/{name}"): handler}) on host:port (0: a free port)."""

    def __init__(self, routes: Mapping[tuple[str, str], Handler], host: str = "127.0.0.1", port: int = 0) -> None:
        self._routes = [(method.upper(), _pattern(path), handler) for (method, path), handler in routes.items()]
        self.host = host
        self._port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> ControlServer:
        server = web.Server(self._serve)
        self._runner = web.ServerRunner(server, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port, reuse_address=True)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
        self._port = sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    async def _serve(self, request: web.BaseRequest) -> web.StreamResponse:
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if match is None or method != request.method:
                continue
            try:
                raw = await request.read()
                body = json.loads(raw) if raw.strip() else {}
                if not isinstance(body, dict):
                    raise ControlError("the body must be a JSON object")
                result = await handler(body, match.groupdict())
            except json.JSONDecodeError as exc:
                return web.json_response({"error": f"the body is not JSON: {exc}"}, status=400)
            except ControlError as exc:
                return web.json_response({"error": str(exc)}, status=400)
            return web.json_response(result if result is not None else {"ok": True})
        known = sorted(f"{m} {p.pattern}" for m, p, _ in self._routes)
        return web.json_response({"error": f"no route {request.method} {request.path}", "routes": known}, status=404)


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path))


def field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = None,
          required: bool = False) -> Any:
    """One field of a control request body, type-checked (bool is not an int here)."""
    if name not in body or body[name] is None:
        if required:
            raise ControlError(f"{name}: required")
        return default
    value = body[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ControlError(f"{name}: expected {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    if float in kinds and isinstance(value, int):
        return float(value)
    if not isinstance(value, kinds):
        raise ControlError(f"{name}: expected {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    return value
