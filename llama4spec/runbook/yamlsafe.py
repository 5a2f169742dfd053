"""Reading a runbook's YAML, bounded: at most MAX_BYTES from a regular file, MAX_DEPTH levels,
MAX_NODES values with every alias expanded, no repeated keys; every refusal is one line."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from llama4spec.runbook.fields import plain, shown

MAX_BYTES = 1 << 20  # the file: read at most this much (1 MiB)
MAX_NODES = 100_000  # YAML values, counting every alias expanded (a "billion laughs" stops here)
MAX_DEPTH = 64  # nesting of mappings and lists


class _Refused(yaml.MarkedYAMLError):
    """A runbook this tool will not build: too large, too deep, a repeated key (reported with its line)."""


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader, bounded: at most MAX_DEPTH levels, MAX_NODES values with every alias expanded
    (counted while composing, so an alias bomb stops before it is built), no recursive aliases, no
    repeated keys; a value Python cannot build (a 30 February, an integer of 5,000 digits) is a YAML
    error at its line instead of a ValueError."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise _Refused(None, None, f"the alias *{event.anchor} is inside the value it names (a structure "
                               f"that contains itself); write the value out", event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep; a runbook needs a few",
                           self.peek_event().start_mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if size > MAX_NODES:
            raise _Refused(None, None, f"this value expands to more than {MAX_NODES:,} values (through anchors and "
                           f"aliases: &name, *name); a runbook is at most {MAX_NODES:,}", node.start_mark)
        if isinstance(node, yaml.MappingNode):
            self._check_keys(node)
        self._sizes[id(node)] = size
        return node

    def _check_keys(self, node: yaml.MappingNode) -> None:
        """Refuse a key written twice (YAML would keep the last one silently). Checked on the node as
        written: merge keys (<<) may repeat a key on purpose and are left alone."""
        first: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            try:
                earlier = first.setdefault(key, key_node.start_mark)
            except TypeError:
                continue
            if earlier is not key_node.start_mark:
                raise _Refused(None, None, f"the key {shown(key)} is repeated (first at line {earlier.line + 1}); "
                               f"a mapping lists each key once", key_node.start_mark)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, TypeError) as err:
            value = node.value if isinstance(node.value, str) else node.tag
            raise ConstructorError(None, None, f"cannot read the value {shown(value)} ({plain(str(err), 200)})",
                                   node.start_mark) from None


def _read(path: Path) -> tuple[str | None, str | None]:
    """(text, problem): a regular file of at most MAX_BYTES, UTF-8. Never reads more than MAX_BYTES + 1
    bytes, never opens a device or FIFO for reading."""
    where = plain(str(path))
    try:
        info = path.stat()
    except FileNotFoundError:
        return None, f"{where}: no such runbook file; see runbooks/ for the shipped ones"
    except (OSError, ValueError) as err:
        return None, f"{where}: cannot read it ({getattr(err, 'strerror', None) or err})"
    too_big = (f"{where}: the file is larger than {MAX_BYTES // 1024:,} KiB; a runbook is a short YAML file "
               f"(a sweep step stands for many points)")
    if stat.S_ISDIR(info.st_mode):
        return None, f"{where}: is a directory; give a runbook YAML file (see runbooks/)"
    if not stat.S_ISREG(info.st_mode):
        return None, f"{where}: is not a regular file (a device, pipe or socket); give a runbook YAML file"
    if info.st_size > MAX_BYTES:
        return None, too_big
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        return None, f"{where}: cannot read it ({err.strerror})"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # replaced since the check
            return None, f"{where}: is not a regular file; give a runbook YAML file"
        try:
            data = f.read(MAX_BYTES + 1)
        except OSError as err:
            return None, f"{where}: cannot read it ({err.strerror})"
    if len(data) > MAX_BYTES:
        return None, too_big
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return None, (f"{where}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}); a runbook is a "
                      f"YAML text file, saved as UTF-8")


def _yaml_problem(where: str, text: str, err: Exception) -> str:
    """One line for any YAML error, with the line when known."""
    if isinstance(err, _Refused):
        mark = err.problem_mark
        return f"{where}: line {mark.line + 1}: {err.problem}" if mark else f"{where}: {err.problem}"
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(err.position, 0)) + 1
        return (f"{where}: not a text file: character #x{err.character:04x} at line {line} is not allowed in YAML; "
                f"a runbook is a YAML text file")
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = err.problem or err.context or "not valid YAML"
        at = f" at line {mark.line + 1}" if mark else ""
        return f"{where}: not valid YAML{at} ({plain(what, 200)}); fix the syntax"
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return f"{where}: not valid YAML ({plain(first, 200)}); fix the syntax"


def read_yaml(path: Path) -> tuple[Any, str | None]:
    """(data, None) for a readable runbook file, or (None, the one-line problem)."""
    path = Path(path)
    text, problem = _read(path)
    if problem or text is None:
        return None, problem or f"{path}: cannot read it"
    where = plain(str(path))
    try:
        return yaml.load(text, Loader=_Loader), None  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        return None, _yaml_problem(where, text, err)
    except RecursionError:
        return None, f"{where}: nested too deeply; a runbook needs a few levels"
