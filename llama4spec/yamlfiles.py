"""Reading YAML the tool did not write (a runbook, a config, a run's config.yaml), bounded
(``files``' rules): at most MAX_DEPTH levels, MAX_NODES values with every alias expanded, no
repeated keys; every refusal is ``files.Unreadable``, one line naming the file and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from llama4spec.files import MAX_DEPTH, MAX_NODES, RECORD, Expect, Unreadable, plain, read_text, shown


class _Refused(yaml.MarkedYAMLError):
    """YAML this tool will not build: too large, too deep, a repeated key (reported with its line)."""


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
            raise _Refused(None, None, f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark)
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
                           f"aliases: &name, *name); at most {MAX_NODES:,}", node.start_mark)
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


def _yaml_problem(where: str, text: str, err: Exception, expect: Expect) -> str:
    """One line for any YAML error, with the line when known."""
    if isinstance(err, _Refused):
        mark = err.problem_mark
        return f"{where}: line {mark.line + 1}: {err.problem}" if mark else f"{where}: {err.problem}"
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(err.position, 0)) + 1
        return (f"{where}: not a text file: character #x{err.character:04x} at line {line} is not allowed in YAML; "
                f"{expect.fix}")
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        what = err.problem or err.context or "not valid YAML"
        at = f" at line {mark.line + 1}" if mark else ""
        return f"{where}: not valid YAML{at} ({plain(what, 200)}); fix the syntax"
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return f"{where}: not valid YAML ({plain(first, 200)}); fix the syntax"


def parse_yaml(text: str, where: str, expect: Expect) -> Any:
    """YAML text through the bounded loader; Unreadable (one line) otherwise."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        raise Unreadable(_yaml_problem(where, text, err, expect)) from None
    except RecursionError:
        raise Unreadable(f"{where}: nested more than {MAX_DEPTH} levels deep; {expect.fix}") from None


def read_yaml(path: Path, expect: Expect = RECORD) -> Any:
    """A YAML file, bounded; Unreadable (one line) for anything that is not one."""
    return parse_yaml(read_text(path, expect), plain(str(path)), expect)
