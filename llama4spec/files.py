"""Files the tool reads and writes, in one place.

Reading: every JSON or YAML file the tool did not just write (a runbook, a benchmark result given to
``compare``, every record read back from a run directory) is read through ``read_json`` or
``yamlfiles.read_yaml``: at most ``Expect.max_bytes`` from a regular file (never a directory, device or FIFO),
UTF-8, at most MAX_DEPTH levels deep, YAML with at most MAX_NODES values counting every alias
expanded and no repeated keys. Every refusal is ``Unreadable``: one line naming the file, what is
wrong and what to give instead.

Writing: every record is written whole by ``write_atomic``: a temporary file in the same directory,
flushed to disk, then renamed into place (a reader never sees half a record, a crash never leaves
one); a symlink at the path is replaced, never followed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError

MAX_DEPTH = 64  # nesting of mappings and lists: a record or a runbook needs a few
MAX_NODES = 100_000  # YAML values, counting every alias expanded (a "billion laughs" stops here)
RECORD_BYTES = 64 << 20  # a record or a benchmark result: a few KiB to a few MiB (per-request details)


@dataclass(frozen=True)
class Expect:
    """What a file should be: its noun in messages (``runbook``), what to give instead, and its size cap."""

    noun: str
    fix: str
    max_bytes: int = RECORD_BYTES


RECORD = Expect("run record", "it is not a record this tool wrote whole; run the step again (--resume)")


class Unreadable(UserError):
    """A file that cannot be read as what it should be (one line)."""


def plain(text: str, limit: int = 300) -> str:
    """Text as it may appear in a one-line message: control characters escaped, at most ``limit`` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit + 1])
    return out[:limit] + "…" if len(out) > limit else out


def shown(value: Any, limit: int = 60) -> str:
    """A user's value in a one-line message: a string quoted, anything else as Python writes it."""
    return f"'{plain(value, limit)}'" if isinstance(value, str) else plain(repr(value), limit)


# -- numbers read back -------------------------------------------------------------------------------
# Every number a record holds is read through ``number`` or ``count`` before any arithmetic: a value
# that is not one, or beyond what any measurement here reaches, is None (not measured), so neither
# a 400-digit integer nor 1e308 ever reaches float(), round() or a product.
MAX_FIGURE = 1e15  # rates, tokens, milliseconds, seconds (also since the epoch): far below this
MAX_COUNT = 10**12  # requests, tokens, drafts, runs


def number(value: Any, low: float = -MAX_FIGURE, high: float = MAX_FIGURE) -> float | None:
    """``value`` as a float when it is a number (never a bool or text), finite and in [low, high];
    else None. Integers are compared before any conversion."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return float(value) if low <= value <= high else None
    return value if math.isfinite(value) and low <= value <= high else None


def count(value: Any, low: int = 0, high: int = MAX_COUNT) -> int | None:
    """``value`` when it is a whole number (never a bool) in [low, high]; else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None


# -- reading -----------------------------------------------------------------------------------------
def _open_regular(path: Path, expect: Expect) -> int:
    """A file descriptor of ``path``, a regular file of at most ``expect.max_bytes``; never opens a
    device or FIFO for reading (it could block, or never end)."""
    where = plain(str(path))
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise Unreadable(f"{where}: no such {expect.noun} file; {expect.fix}") from None
    except (OSError, ValueError) as err:
        raise Unreadable(f"{where}: cannot read it ({getattr(err, 'strerror', None) or err}); {expect.fix}") from None
    if stat.S_ISDIR(info.st_mode):
        raise Unreadable(f"{where}: is a directory, not a {expect.noun} file; {expect.fix}")
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable(f"{where}: is not a regular file (a device, pipe or socket); {expect.fix}")
    if info.st_size > expect.max_bytes:
        raise Unreadable(_too_big(where, expect))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise Unreadable(f"{where}: cannot read it ({err.strerror}); {expect.fix}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the check
        os.close(fd)
        raise Unreadable(f"{where}: is not a regular file; {expect.fix}")
    return fd


def _too_big(where: str, expect: Expect) -> str:
    return f"{where}: the file is larger than {expect.max_bytes // 1024:,} KiB, too large for a {expect.noun}; {expect.fix}"


def read_bytes(path: Path, expect: Expect) -> bytes:
    """The bytes of a regular file of at most ``expect.max_bytes`` (never more than that is read)."""
    path = Path(path)
    fd = _open_regular(path, expect)
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(expect.max_bytes + 1)
        except OSError as err:
            raise Unreadable(f"{plain(str(path))}: cannot read it ({err.strerror}); {expect.fix}") from None
    if len(data) > expect.max_bytes:
        raise Unreadable(_too_big(plain(str(path)), expect))
    return data


def read_text(path: Path, expect: Expect) -> str:
    """A regular file's text (UTF-8), bounded as ``read_bytes``."""
    data = read_bytes(path, expect)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise Unreadable(f"{plain(str(path))}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}); "
                         f"{expect.fix}") from None


def depth(data: Any) -> int:
    """How many levels of lists and mappings ``data`` nests (walked without recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:  # deeper than that is refused anyway
            stack.extend((child, level + 1) for child in children)
    return deepest


def parse_json(text: str, where: str, expect: Expect) -> Any:
    """JSON text, at most MAX_DEPTH levels deep; Unreadable (one line) otherwise."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise Unreadable(f"{where}: nested more than {MAX_DEPTH} levels deep; {expect.fix}") from None
    except json.JSONDecodeError as err:
        early = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        cut = " (the file ends early: cut short while it was written?)" if early else ""
        raise Unreadable(f"{where}: not valid JSON ({plain(err.msg, 80)}: line {err.lineno}, column {err.colno})"
                         f"{cut}; {expect.fix}") from None
    except ValueError as err:  # an integer of 5,000 digits
        raise Unreadable(f"{where}: not valid JSON ({plain(str(err), 120)}); {expect.fix}") from None
    if depth(data) > MAX_DEPTH:
        raise Unreadable(f"{where}: nested more than {MAX_DEPTH} levels deep; {expect.fix}")
    return data


def read_json(path: Path, expect: Expect = RECORD) -> Any:
    """A JSON file, bounded; Unreadable (one line) for anything that is not one."""
    return parse_json(read_text(path, expect), plain(str(path)), expect)


def json_or_none(path: Path, expect: Expect = RECORD) -> tuple[Any, str | None]:
    """(data, None); (None, None) when there is no such file; (None, the one-line problem) otherwise
    (a file holding JSON null among them: it is there, so it is not "no such file")."""
    if not os.path.lexists(path):
        return None, None
    try:
        data = read_json(path, expect)
    except Unreadable as err:
        return None, str(err)
    if data is None:
        return None, f"{plain(str(path))}: holds null, not a {expect.noun}; {expect.fix}"
    return data, None


# -- writing -----------------------------------------------------------------------------------------
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once: os.umask can only be read by setting it


def write_atomic(path: Path, content: str | bytes) -> None:
    """``content`` into ``path`` whole: a temporary file beside it, flushed to disk, renamed into
    place (a reader never sees half a file, a crash never leaves one; a symlink at ``path`` is
    replaced, not followed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None  # names the record, not its temporary
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    """The rename itself to disk (where the system allows a directory to be synced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def finite(data: Any) -> Any:
    """``data`` with every NaN or infinity as None (null): a figure that was not a number."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


NULLED = "written_null"  # the note a JSON record carries when a figure that was not a number was written null


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as strict JSON text, the one way the tool turns a record into JSON: a NaN or infinity
    (a figure that was not a number) is written null, and a mapping says which figures were so in
    ``written_null`` (their dotted keys), so a reader knows a null there was not a missing value."""
    nulled = non_finite_keys(data)
    if nulled:
        data = finite(data)
        if isinstance(data, dict):
            data = {**data, NULLED: sorted(set(nulled) | set(data.get(NULLED) or ()))}
    return json.dumps(data, indent=indent, default=str, allow_nan=False)


def non_finite_keys(data: Any) -> list[str]:
    """The dotted keys of every NaN or infinity in ``data`` (walked without recursion)."""
    found, stack = [], [(data, "")]
    while stack:
        value, key = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(key or "the value")
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
        stack.extend((v, f"{key}.{k}" if key else str(k)) for k, v in items)
    return found


def write_json(path: Path, data: Any) -> None:
    """A record as strict JSON (``json_text``), whole."""
    write_atomic(Path(path), json_text(data) + "\n")


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def cell(value: Any) -> Any:
    """A CSV cell: text that a spreadsheet would take for a formula (``=HYPERLINK(...)``, ``@SUM``)
    gets a leading ``'`` and is kept as text, and so does every line of it after a CR or LF (a
    reader that splits rows at a bare CR must not find a formula at a row's start); numbers and
    everything else are left as they are."""
    if not isinstance(value, str):
        return value
    parts = re.split(r"(\r\n|\r|\n)", value)  # lines, with the breaks between them kept
    text = "".join("'" + part if i % 2 == 0 and part.startswith(FORMULA_START) else part
                   for i, part in enumerate(parts))
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_text(header: list[str], rows: list[list[Any]] | list[dict[str, Any]]) -> str:
    """A CSV file's text as RFC 4180 has it (rows end with CR LF; a cell holding a CR, LF, quote or
    comma is quoted), rows as lists or as dicts by ``header``, every cell through ``cell``: the one
    writer of the CSV files a run leaves, which people open in spreadsheets."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow([cell(h) for h in header])
    for row in rows:
        values = [row.get(h) for h in header] if isinstance(row, dict) else row
        writer.writerow(["" if v is None else cell(v) for v in values])
    return out.getvalue()


def outside(root: Path, path: Path) -> bool:
    """Whether writing ``path`` would land outside ``root`` (through ``..`` or a symlinked directory)."""
    try:
        return not Path(path).parent.resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError, ValueError):
        return True
