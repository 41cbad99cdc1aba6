"""A small subset of CEL for `x-kubernetes-validations` rules (pure, no I/O).

Supported: `self` and field access (`self.a.b`), `has(self.a.b)`, literals (integers, strings,
true/false/null), `!`, `&&`, `||`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `+` on numbers and
strings, `size(x)` / `x.size()`, `x in list`, parentheses. A rule outside this subset (or one
that uses `oldSelf`, a transition rule) is not evaluated: `compile_rule` returns None and the
caller skips it, as documented in the emulator's design note.
"""

from __future__ import annotations

import functools

import re
from collections.abc import Callable
from typing import Any

Expr = Callable[[Any], Any]
_TOKENS = re.compile(r"""\s*(?:(?P<num>\d+)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|"""
                     r"""(?P<op>&&|\|\||==|!=|<=|>=|[!<>().+,\[\]])|(?P<name>[A-Za-z_][A-Za-z0-9_]*))""")
_MISSING = object()


class Unsupported(Exception):
    pass


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKENS.match(text, pos)
        if match is None or match.end() == pos:
            raise Unsupported(text[pos:])
        kind = match.lastgroup or ""
        tokens.append((kind, match[kind]))
        pos = match.end()
    return tokens


class _Parser:
    BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4, "+": 5}

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens) or (expected is not None and self.tokens[self.pos][1] != expected):
            raise Unsupported(f"expected {expected}")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expression(self, min_power: int = 0) -> Expr:
        left = self.unary()
        while (op := self.peek()) in self.BINARY and self.BINARY[op] > min_power:
            self.take()
            left = _binary(op, left, self.expression(self.BINARY[op]))
        return left

    def unary(self) -> Expr:
        if self.peek() == "!":
            self.take()
            inner = self.unary()
            return lambda self_: not _truth(inner(self_))
        return self.postfix(self.primary())

    def primary(self) -> Expr:
        kind, text = self.take()
        if kind == "num":
            return lambda _: int(text)
        if kind == "str":
            value = bytes(text[1:-1], "utf-8").decode("unicode_escape")
            return lambda _: value
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if text in ("true", "false", "null"):
            value = {"true": True, "false": False, "null": None}[text]
            return lambda _: value
        if text == "self":
            return lambda self_: self_
        if text in ("has", "size") and self.peek() == "(":
            self.take("(")
            if text == "has":
                target = self.postfix(self.primary(), for_has=True)
                self.take(")")
                return lambda self_: target(self_) is not _MISSING
            inner = self.expression()
            self.take(")")
            return lambda self_: len(inner(self_))
        raise Unsupported(text)  # oldSelf, macros, other functions

    def postfix(self, target: Expr, for_has: bool = False) -> Expr:
        while self.peek() == ".":
            self.take(".")
            _, name = self.take()
            if self.peek() == "(" and name == "size":
                self.take("(")
                self.take(")")
                target = (lambda t: lambda self_: len(t(self_)))(target)
                continue
            target = _field(target, name, for_has)
        return target


def _field(target: Expr, name: str, for_has: bool) -> Expr:
    def get(self_: Any) -> Any:
        value = target(self_)
        if isinstance(value, dict) and name in value:
            return value[name]
        if for_has:
            return _MISSING
        raise KeyError(name)  # "no such key": the rule errors, as in CEL
    return get


def _truth(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("no matching overload")
    return value


def _binary(op: str, left: Expr, right: Expr) -> Expr:
    if op == "&&":
        return lambda s: _truth(left(s)) and _truth(right(s))
    if op == "||":
        return lambda s: _truth(left(s)) or _truth(right(s))
    compare: dict[str, Callable[[Any, Any], Any]] = {
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "+": lambda a, b: a + b, "in": lambda a, b: a in b}
    return lambda s: compare[op](left(s), right(s))


@functools.lru_cache(maxsize=1024)
def compile_rule(rule: str) -> Callable[[Any], bool] | None:
    """The rule as a function of `self` (True: valid), or None if it is outside the subset.
    Compiled once per rule text (the CRDs' rules were parsed again at every write)."""
    try:
        parser = _Parser(rule)
        expr = parser.expression()
        if parser.peek() is not None:
            return None
    except Unsupported:
        return None

    def check(self_: Any) -> bool:
        try:
            return _truth(expr(self_))
        except (KeyError, TypeError):
            return False  # an evaluation error fails the rule, as on the real server
    return check
