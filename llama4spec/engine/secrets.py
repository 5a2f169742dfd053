"""Secrets: where they come from (by variable name, never on argv) and how they are hidden.

Every record, log line and printed command goes through one function, ``redact(obj, secrets)``:
it walks dicts, lists and strings and replaces with ``***``

- known secret values wherever they occur, also inside longer strings (``secrets``; see
  ``known_secrets`` for where they are collected: env values under secret-looking names, the
  API key, ``${oc.env:VAR}`` values of secret-looking variables, ...);
- values under secret-looking names: environment mappings (``HF_TOKEN: ...``), secret fields
  (``api_key``, ``password``, ...), ``key=value`` text such as the override ``+env.HF_TOKEN=...``;
- the value of a secret flag on a command line (``--api-key VALUE``, ``--api-key=VALUE``);
- credentials in URLs (``http://user:pass@host`` -> ``http://user:***@host``).

``redact_env`` is the same function for an environment mapping.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping as AnyMapping  # for isinstance: typing's alias checks slowly
from typing import Any, Iterable, Mapping

# An environment variable's name that looks secret (HF_TOKEN, VLLM_API_KEY, DB_PASSWORD, ...);
# TOKENIZERS_PARALLELISM is a setting, not a token.
SECRET_NAME = re.compile(r"(KEY|TOKEN(?!IZER)|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)
# A config field or command-line flag that holds a secret (api_key, hf_token, --api-key); stricter
# than SECRET_NAME so that max_tokens, api_key_env or --max-num-batched-tokens stay visible.
SECRET_FIELD = re.compile(r"(^|_)(api_?key|access_?key|private_?key|secret_?key|token|secret|password|passwd|"
                          r"credentials?|cookie)$", re.IGNORECASE)
ENV_LIKE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # HF_TOKEN: judged as an environment variable name
REDACTED = "***"
MIN_SECRET_LEN = 4  # shorter known values are hidden by name only (replacing "1" everywhere hides nothing)

# Secret-looking names in a login environment that hold plumbing, not secrets.
NOT_SECRET = {"SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER", "DESKTOP_SESSION", "XAUTHORITY"}
NOT_SECRET_PREFIXES = ("XDG_SESSION_", "XDG_SEAT")

_URL_CREDENTIALS = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)([^\s/@:'\"]+)(?::([^\s/@'\"]*))?@")
_QUOTED_OR_WORD = r"""'[^']*'|"(?:[^"\\]|\\.)*"|[^\s'"&;,]+"""
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)(=|\s+)(" + _QUOTED_OR_WORD + ")")
_ASSIGNMENT = re.compile(r"(?<![\w.\-/$])([+~]{0,2}[A-Za-z_]\w*(?:(?:\.|\[\d+\]\.?)\w+)*)=(?!=)(" + _QUOTED_OR_WORD + ")")
_REFERENCE = re.compile(r"^\$\{?[A-Za-z_]\w*\}?$")  # $MY_API_KEY: names where a value comes from
_OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_]\w*)")


def secret_name(name: str) -> bool:
    """An environment variable's name that looks secret."""
    return bool(SECRET_NAME.search(name))


def _is_env_mapping(key: str) -> bool:
    k = key.lower()
    return k in ("env", "environ", "environment") or k.endswith("_env")


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str, env: bool) -> bool:
    """A mapping key (or a flag or override key's last part) whose value is secret."""
    if env or ENV_LIKE.match(key):
        return secret_name(key)
    return bool(SECRET_FIELD.search(key))


def secret_key_path(path: str) -> bool:
    """An override key such as ``+env.HF_TOKEN`` or ``cluster.hosts[0].env.X``: its last part decides."""
    parts = [p for p in re.split(r"[.\[\]]+", path.lstrip("+~")) if p]
    if not parts:
        return False
    return _secret_key(parts[-1], len(parts) > 1 and _is_env_mapping(parts[-2]))


def _flag_secret(flag: str) -> bool:
    return _secret_key(flag.lstrip("-").replace("-", "_"), False)


def _hidden(value: str) -> bool:
    """Already redacted, or a reference to a variable by name: nothing to hide."""
    return value.startswith(REDACTED) or bool(_REFERENCE.match(value))


def _known(secrets: Iterable[str]) -> tuple[str, ...]:
    """Known values worth replacing, longest first (so a secret inside another goes with it)."""
    return tuple(sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN},
                        key=lambda s: (-len(s), s)))


class _Walk:
    """One redaction pass; ``found`` collects every value a rule (not a known value) removed."""

    def __init__(self, secrets: Iterable[str]):
        self.known = _known(secrets)
        self.found: set[str] = set()
        self._texts: dict[str, tuple[str, frozenset[str]]] = {}  # a string walked before: its result, its finds

    def text(self, text: str) -> str:
        """``text`` redacted (the same string recurs in many argv lists: each is read once)."""
        done = self._texts.get(text)
        if done is None:
            outer, self.found = self.found, set()
            try:
                done = self._texts[text] = self._text(text), frozenset(self.found)
            finally:
                self.found = outer
        self.found |= done[1]
        return done[0]

    def _drop(self, value: str) -> str:
        if not _hidden(value):
            self.found.add(value.strip("'\""))
        return value if _hidden(value) else REDACTED

    def _text(self, text: str) -> str:
        for s in self.known:
            text = text.replace(s, REDACTED)

        def url(m: re.Match) -> str:
            scheme, user, password = m.groups()
            if password is None:  # https://TOKEN@host: the user part is the credential
                return f"{scheme}{self._drop(user)}@"
            return f"{scheme}{user}:{self._drop(password) if password else ''}@"

        def flag(m: re.Match) -> str:
            name, sep, value = m.groups()
            if not _flag_secret(name) or value.startswith("-"):
                return m.group(0)
            return f"{name}{sep}{self._drop(value)}"

        def assignment(m: re.Match) -> str:
            key, value = m.groups()
            return f"{key}={self._drop(value)}" if secret_key_path(key) else m.group(0)

        text = _URL_CREDENTIALS.sub(url, text)
        text = _FLAG.sub(flag, text)
        return _ASSIGNMENT.sub(assignment, text)

    def value(self, obj: Any, env: bool = False) -> Any:
        if isinstance(obj, str):  # first: most of what is walked (argv), and the quickest test
            return self.text(obj)
        if isinstance(obj, AnyMapping):
            out = {}
            for k, v in obj.items():
                key = str(k)
                if _secret_key(key, env) and v is not None and not isinstance(v, (AnyMapping, list, tuple)):
                    out[k] = self._drop(v) if isinstance(v, str) else self._drop(str(v))
                else:
                    out[k] = self.value(v, _is_env_mapping(key))
            return out
        if isinstance(obj, (list, tuple)):
            out_list, after_flag = [], False
            for item in obj:
                if after_flag and isinstance(item, str) and not item.startswith("-"):
                    out_list.append(self._drop(item))  # --api-key VALUE: the element after the flag
                else:
                    out_list.append(self.value(item, env))
                after_flag = isinstance(item, str) and item.startswith("-") and "=" not in item and _flag_secret(item)
            return out_list if isinstance(obj, list) else tuple(out_list)
        return obj


def redact(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """``obj`` (a dict, list, string or scalar) with every secret replaced by ``***``: the known
    values in ``secrets`` anywhere (also inside longer strings), values under secret-looking names,
    secret flags' values, credentials in URLs. Returns a new object; ``obj`` is unchanged."""
    return _Walk(secrets).value(obj)


def redact_env(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """An environment mapping (sorted by name), redacted: every name is judged as a variable name."""
    return _Walk(secrets).value(dict(sorted(env.items())), env=True)


def harvest(*sources: Any) -> set[str]:
    """The values the rules alone would remove from ``sources`` (env values under secret names,
    secret flags' values, ``key=value`` overrides, URL passwords): known secrets from then on,
    wherever else they appear (e.g. inside a command line's override text)."""
    walk = _Walk(())
    for source in sources:
        walk.value(source)
    return {s for s in walk.found if s and s != REDACTED}


def secret_view(obj: Any, env: bool = False) -> Any:
    """What ``harvest`` and ``oc_env_names`` read of ``obj``, as a hashable value: its strings, the
    values under secret names, every list's positions (a secret flag's value is the item after it);
    numbers, booleans and nulls elsewhere hold no secret and are left out. Objects with equal views
    yield the same known secrets (``known_secrets``), so a plan's configs that differ only in
    numbers (a sweep) are read once."""
    if isinstance(obj, AnyMapping):
        items = []
        for k, v in obj.items():
            key = str(k)
            if isinstance(v, str):
                items.append((key, "=", v) if _secret_key(key, env) else (key, v))
            elif isinstance(v, _CONTAINERS):
                items.append((key, secret_view(v, _is_env_mapping(key))))
            elif v is not None and _secret_key(key, env):
                items.append((key, "=str", str(v)))
        return "map", tuple(items)
    if isinstance(obj, (list, tuple)):
        return "list", tuple(secret_view(item, env) if isinstance(item, (str, *_CONTAINERS)) else None for item in obj)
    return obj if isinstance(obj, str) else None


_CONTAINERS = (AnyMapping, list, tuple)


def oc_env_names(*sources: Any) -> set[str]:
    """Variables named by ``${oc.env:VAR}`` in the strings of ``sources`` (unresolved configs, overrides)."""
    names: set[str] = set()

    def visit(obj: Any) -> None:
        if isinstance(obj, str):
            if "${" in obj:
                names.update(_OC_ENV.findall(obj))
        elif isinstance(obj, AnyMapping):
            for v in obj.values():
                visit(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                visit(v)

    for source in sources:
        visit(source)
    return names


def environ_secrets(environ: Mapping[str, str], names: Iterable[str] = ()) -> set[str]:
    """Values in ``environ`` to hide wherever they show up: of the variables in ``names`` (the API
    key's, ``${oc.env:VAR}`` references with a secret-looking VAR), and of every secret-looking
    variable (which a config may interpolate with ``${oc.env:...}``) except session plumbing,
    paths and values too short to be a credential."""
    found = {environ[n] for n in names if environ.get(n)}
    for name, value in environ.items():
        if (secret_name(name) and name not in NOT_SECRET and not name.startswith(NOT_SECRET_PREFIXES)
                and len(value) >= 8 and not value.startswith("/")):
            found.add(value)
    return found


def known_secrets(*sources: Any, environ: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> tuple[str, ...]:
    """Every known secret value for ``sources`` (env mappings as ``{"env": {...}}``, configs,
    argv lists, override strings): what the rules remove from them, the values of ``names`` in
    ``environ`` (API key variables), and ``environ``'s secret values (``environ_secrets``), with
    every ``${oc.env:VAR}`` in ``sources`` whose VAR looks secret."""
    environ = os.environ if environ is None else environ
    refs = {n for n in oc_env_names(*sources) if secret_name(n)}
    return _known(harvest(*sources) | environ_secrets(environ, [*names, *refs]))


def redact_yaml(text: str, secrets: Iterable[str] = ()) -> str:
    """A YAML document's text (a runbook) redacted and still valid YAML with its comments: known
    values are replaced in place (quoted where ``***`` would start a plain scalar, which YAML would
    read as an alias). If a secret is still there by the rules (e.g. a short value under a secret
    name), the document is re-written from its data, redacted, without comments."""
    import yaml

    known = _known(secrets)

    def in_place(line: str) -> str:
        for s in known:
            parts = line.split(s)
            if len(parts) == 1:
                continue
            out = parts[0]
            for part in parts[1:]:
                prev, before = out[-1:], out.rstrip(" \t")
                starts = prev in ("", "[", "{", ",") or (prev in " \t" and (not before or before[-1] in ":-?,[{"))
                ends = part[:1] in ("", "\n", "\r", " ", "\t", ",", "]", "}")
                out += (f"'{REDACTED}'" if starts and ends else REDACTED) + part
            line = out
        return line

    redacted = redact("".join(in_place(line) for line in text.splitlines(keepends=True)), known)
    try:
        data = yaml.safe_load(redacted)
        if redact(data, known) == data:
            return redacted
        original = yaml.safe_load(text)
    except yaml.YAMLError:
        try:
            original = yaml.safe_load(text)
        except yaml.YAMLError:
            return redacted
    return ("# redacted by llama4spec (secrets replaced by ***; comments dropped)\n"
            + yaml.safe_dump(redact(original, known), sort_keys=False, allow_unicode=True))


def api_key_env(api_key_var: str | None, as_name: str = "VLLM_API_KEY",
                environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``{as_name: key}`` from the variable ``serve.api_key_env`` names (never on argv); {} when unset."""
    return {as_name: environ[api_key_var]} if api_key_var and environ.get(api_key_var) else {}
