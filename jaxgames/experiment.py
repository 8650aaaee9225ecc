"""Shared plumbing of the experiment scripts: ``key=value`` overrides and results folders.

Each experiment defines a frozen dataclass ``Config``; `parse_config` builds
it from command-line ``key=value`` pairs (typed by the dataclass fields;
tuples as comma-separated lists) and the dataclass's ``__post_init__``
checks every value (`check_names`, `check_positive` help), so that a bad
override fails before anything is written.

`main` turns a bad setting into one line and exit 2: those that `parse_config`
finds, and those an experiment checks itself before it claims its folder
inside ``with up_front():`` (a setting's file content, the memory a setting
needs; `SettingError`).

`ResultsDir` is the results folder of one run. Its rules (``shared/STYLE.md``,
"Results and checkpoints"):

* **one run at a time**: an exclusive lock (``.lock``, ``fcntl.flock``,
  non-blocking; released by the kernel when the process dies, even by
  SIGKILL). A second run into the same folder is refused with
  `ResultsDirLocked`, naming the folder and the holder's pid;
* **one configuration per folder**: ``config.json`` is written first; a run
  whose settings differ from the ``config.json`` already there is refused
  with `ConfigMismatch` (listing the differences) unless ``overwrite=True``,
  which first deletes the files the earlier run wrote (listed in
  ``.manifest.json``). Settings that do not change results (``out``,
  ``progress``, ``resume``, ``overwrite`` and any the experiment adds) are
  not compared, so a resume may change them;
* **atomic writes**: every file is written under a temporary name in the
  same folder, flushed to disk (fsync) and renamed over the final name
  (``os.replace``), so a reader or a resume sees the old file or the new one,
  never half of one. Temporary files left by a killed run are removed by the
  next run;
* **a run that dies leaves no trace**: if the block raises before the run
  wrote anything but its bookkeeping (``config.json``, ``.manifest.json``,
  ``.lock``, also in sub-folders such as a checkpoint folder without a step)
  into a folder that held no run before, that bookkeeping is removed again
  (and the folders this run created), so the corrected command starts fresh
  instead of meeting `ConfigMismatch`;
* **cached pieces checked on load**: `ResultsDir.load_npz` /
  `ResultsDir.load_json` treat a piece that cannot be read (truncated, e.g.
  by a kill during a non-atomic write of an older version) as missing: they
  warn (`CachedPieceWarning`), delete it and return None, so the caller
  recomputes it. A piece saved with a ``key`` (e.g. `config_key` of the
  settings that made it) is returned only to a caller asking for that key.

Orbax checkpoints follow the same rules through `jaxgames.checkpoint`.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import errno
import fcntl
import io
import json
import os
import pathlib
import re
import secrets
import shlex
import shutil
import sys
import types
import typing
import warnings
import zlib
from typing import Any, Iterator, Mapping, Sequence, TypeVar

import numpy as np
from jaxgames.malloc import retain_freed_memory

C = TypeVar("C")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

#: Config fields that never change results: not compared between a folder's config and a resuming run's.
NEUTRAL_FIELDS = ("out", "progress", "resume", "overwrite")
CONFIG_NAME = "config.json"
LOCK_NAME = ".lock"
MANIFEST_NAME = ".manifest.json"
# Temporary names: ".<final name>.<pid>-<8 hex>.tmp" (files) and ".staging.<pid>-<8 hex>.tmp" (folders).
_TMP_RE = re.compile(r"^\..+\.\d+-[0-9a-f]{8}\.tmp$")


def _convert(text: str, annotation: Any, name: str):
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        non_none = [a for a in args if a is not type(None)]
        if text.lower() in {"none", "null"} and type(None) in args:
            return None
        return _convert(text, non_none[0], name)
    if origin in (tuple, Sequence, list):
        inner = args[0] if args else str
        items = [s for s in text.split(",") if s.strip()]
        return tuple(_convert(s.strip(), inner, name) for s in items)
    if annotation is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{name} must be a boolean (true/false); got {text!r}")
    if annotation in (int, float, str):
        try:
            return annotation(text)
        except ValueError:
            raise ValueError(f"{name} must be {annotation.__name__}; got {text!r}") from None
    return text


def _fields(cls) -> dict[str, tuple[dataclasses.Field, Any]]:
    hints = typing.get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _nested_class(annotation: Any, default: Any = None) -> type | None:
    """The dataclass a field nests: its annotation, or else the class of its default (a field typed
    ``Any`` whose default is a dataclass instance, e.g. a learner's game-dependent ``network``)."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return type(default) if dataclasses.is_dataclass(default) and not isinstance(default, type) else None


def _default(f: dataclasses.Field, base: Any = None, missing: Any = None) -> Any:
    """A field's default: its value in ``base`` (an instance), else its declared default, else ``missing``."""
    if base is not None:
        return getattr(base, f.name)
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else missing


def setting_keys(cls: type, base: Any = None) -> dict[str, tuple[dataclasses.Field, Any]]:
    """Every ``key=value`` key of the config class ``cls``: nested dataclass fields as dotted keys
    (``learner.num_envs``), each with its field and type annotation (``base``: the instance whose
    values are the defaults)."""
    out = {}
    for name, (f, annotation) in _fields(cls).items():
        default = _default(f, base)
        inner = _nested_class(annotation, default)
        if inner is not None:
            out.update({f"{name}.{k}": v for k, v in setting_keys(inner, default).items()})
        else:
            out[name] = (f, annotation)
    return out


def _resolve(key: str, keys: dict) -> str:
    """The dotted key that ``key`` names: itself, or the one nested key it ends (the flat spelling of older
    command lines, e.g. ``num_envs`` for ``learner.num_envs``; ``network.channels`` for ``learner.network.channels``)."""
    if key in keys:
        return key
    matches = [k for k in keys if k.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    hint = f"; did you mean one of {', '.join(matches)}?" if matches else f"; known keys: {', '.join(sorted(keys))}"
    raise ValueError(f"unknown key {key!r}{hint} (--help lists every setting)")


def _build(cls: type, overrides: dict, prefix: str = "", base: Any = None):
    kwargs = {}
    for name, (f, annotation) in _fields(cls).items():
        default = _default(f, base)
        inner = _nested_class(annotation, default)
        if inner is not None:
            sub = {k: v for k, v in overrides.items() if k.startswith(f"{prefix}{name}.")}
            if sub:
                kwargs[name] = _build(inner, sub, f"{prefix}{name}.", default)
        elif f"{prefix}{name}" in overrides:
            kwargs[name] = overrides[f"{prefix}{name}"]
    if base is not None:
        return dataclasses.replace(base, **kwargs)
    return cls(**kwargs)


def parse_config(cls: type[C], argv: Sequence[str], base: C | None = None) -> C:
    """Builds ``cls`` from ``key=value`` strings.

    Nested dataclass fields take dotted keys (``learner.num_envs=64``); a key
    that is the last part of exactly one dotted key stands for it
    (``num_envs=64``). Values are typed by the field annotations (tuples as
    comma-separated lists, ``none`` for None); a field whose metadata has a
    ``"parse"`` callable gets the text through it. A field typed ``Any`` whose
    default is a dataclass nests like one (``learner.network.channels``).

    Args:
        cls: a dataclass type.
        argv: e.g. ``["num_iterations=1000", "games=subsidy_game,stag_hunt"]``.
        base: an instance of ``cls`` whose values the unnamed settings keep (None: the declared defaults).

    Returns:
        ``cls(**overrides)``, or ``dataclasses.replace(base, **overrides)`` (its ``__post_init__`` validates
        the values).

    Raises:
        ValueError: for an argument that is not ``key=value``, an unknown
            key or a value of the wrong type (each message names the key).
    """
    keys = setting_keys(cls, base)
    overrides = {}
    for arg in argv:
        if "=" not in arg:
            raise ValueError(f"arguments are key=value; got {arg!r} (--help lists every setting)")
        key, value = arg.split("=", 1)
        key = _resolve(key.strip().lstrip("-").replace("-", "_"), keys)
        f, annotation = keys[key]
        parse = f.metadata.get("parse")
        overrides[key] = parse(value) if parse is not None else _convert(value, annotation, key)
    return _build(cls, overrides, base=base)


def _docstring_help(cls: type) -> dict[str, str]:
    """``name: text`` entries of a class docstring (several names may share one entry: ``a, b: text``)."""
    out: dict[str, str] = {}
    current: list[str] = []
    indent = None
    for line in (cls.__doc__ or "").splitlines():
        m = re.match(r"^(\s+)([A-Za-z_][\w]*(?:,\s*[A-Za-z_][\w]*)*):\s*(.*)$", line)
        if m and not m.group(3):  # a section header ("Attributes:")
            current, indent = [], None
        elif m and (indent is None or len(m.group(1)) <= indent):
            indent = len(m.group(1))
            current = [n.strip() for n in m.group(2).split(",")]
            for n in current:
                out[n] = m.group(3).strip()
        elif current and line.strip() and indent is not None and len(line) - len(line.lstrip()) > indent:
            for n in current:
                out[n] = (out[n] + " " + line.strip()).strip()
        else:
            current = []
    return out


def describe(cls: type) -> list[dict]:
    """One row per ``key=value`` setting of ``cls``: ``key``, ``type``, ``default``, ``help`` (the field's
    ``metadata["help"]``, else its entry in the docstring of its class or a base class) and ``show`` (the
    field's ``metadata["show"]``, a function writing the default as a value the command line takes)."""
    rows = []

    def walk(c: type, prefix: str, base: Any):
        docs = {}
        for k in reversed(c.__mro__):  # a subclass's entries win; a base class documents inherited fields
            docs.update(_docstring_help(k))
        for name, (f, annotation) in _fields(c).items():
            default = _default(f, base, dataclasses.MISSING)
            inner = _nested_class(annotation, default)
            if inner is not None:
                walk(inner, f"{prefix}{name}.", None if default is dataclasses.MISSING else default)
                continue
            kind = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
            rows.append({"key": prefix + name, "type": kind,
                         "default": "(required)" if default is dataclasses.MISSING else default,
                         "help": f.metadata.get("help") or docs.get(name, ""), "show": f.metadata.get("show", _show)})

    walk(cls, "", None)
    return rows


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(_show(v) for v in value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def help_text(cls: type, prog: str, summary: str = "") -> str:
    """The ``--help`` page of a config class: usage, ``summary``, then each setting's key, type, default and meaning."""
    lines = [f"usage: python {prog} [key=value ...]", ""]
    if summary:
        lines += [summary.strip(), ""]
    lines.append("settings (key: type = default  meaning):")
    for r in describe(cls):
        lines.append(f"  {r['key']}: {r['type']} = {r['show'](r['default'])}")
        if r["help"]:
            lines.append(f"      {r['help']}")
    return "\n".join(lines)


def main(cls: type[C], run: Any, argv: Sequence[str] | None = None, *, prog: str | None = None,
         summary: str = "") -> Any:
    """An experiment's command line: ``--help`` prints `help_text` and exits 0; a bad setting, or a results
    folder that this run cannot use (`ResultsDirError`: another configuration's results, another live run's
    lock), prints one line naming it and exits 2 (before anything is written); otherwise returns
    ``run(config, argv)``. The process keeps freed memory for reuse (`jaxgames.malloc.retain_freed_memory`:
    XLA:CPU's training steps run faster without mapping their temporaries afresh on every call).

    Args:
        cls: the experiment's ``Config`` dataclass.
        run: ``run(config, argv)``: the experiment (owns its `ResultsDir`).
        argv: the arguments (default ``sys.argv[1:]``).
        prog: the script's path for the usage line (default ``sys.argv[0]``).
        summary: the first paragraph of the help page (e.g. the module docstring's first line).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or sys.argv[0]
    if any(a in ("-h", "--help", "help") for a in argv):
        print(help_text(cls, prog, summary))
        raise SystemExit(0)
    try:
        config = parse_config(cls, argv)
    except (ValueError, TypeError) as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    retain_freed_memory()
    try:
        return run(config, argv)
    except (SettingError, ResultsDirError) as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


class SettingError(ValueError):
    """A setting refused by an experiment's own checks before its folder is claimed (`up_front`);
    `main` prints it as one line and exits 2."""


@contextlib.contextmanager
def up_front() -> Iterator[None]:
    """The checks an experiment runs before it claims its folder: a ``ValueError``, ``TypeError`` or
    ``FileNotFoundError`` raised inside becomes a `SettingError` (same message), which `main` prints as
    one line with exit 2. Use it only around checks, never around work that writes."""
    try:
        yield
    except SettingError:
        raise
    except (ValueError, TypeError, FileNotFoundError) as err:
        raise SettingError(str(err)) from err


def in_results_dir(config: Any, body: Any, *, neutral: Sequence[str] = NEUTRAL_FIELDS) -> Any:
    """``body(config, rd)`` inside the results folder ``rd`` of ``config.out`` (a `ResultsDir`: lock,
    config check, ``config.overwrite``), closed afterwards whatever happens.

    Raises:
        ResultsDirLocked: another run writes into ``config.out``.
        ConfigMismatch: ``config.out`` holds another configuration's results.
    """
    with ResultsDir(config.out, config, overwrite=getattr(config, "overwrite", False), neutral=neutral) as rd:
        return body(config, rd)


def markdown_table(rows: Sequence[Mapping], columns: Sequence[str] | None = None, *,
                   formats: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None) -> str:
    """A Markdown table of ``rows`` (one dict each).

    Args:
        rows: the rows.
        columns: the keys shown, in order (default: the first row's keys).
        formats: a format spec per key (e.g. ``{"rate": ".3f"}``); others as ``str``, None as "".
        headers: a header per key (default: the key).
    """
    columns = list(columns if columns is not None else (rows[0].keys() if rows else []))
    formats, headers = dict(formats or {}), dict(headers or {})

    def cell(v, spec):
        if v is None:
            return ""
        return format(v, spec) if spec else str(v)

    lines = ["| " + " | ".join(headers.get(c, c) for c in columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(cell(r.get(c), formats.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- validation helpers


def check_names(name: str, values: Sequence, choices: Sequence | None = None, *, at_least: int = 1) -> None:
    """Checks a tuple override such as ``games=a,b``: long enough, no repeats, every entry known.

    Args:
        name: the field's name, for the message.
        values: the tuple given.
        choices: the allowed entries (None: any).
        at_least: the fewest entries allowed.

    Raises:
        ValueError: fewer than ``at_least`` entries (e.g. ``games=`` empty),
            an entry given twice, or one not in ``choices`` (the message
            lists the choices).
    """
    if len(values) < at_least:
        raise ValueError(f"{name} needs at least {at_least} entr{'y' if at_least == 1 else 'ies'}; got {tuple(values)!r}")
    seen, repeated = set(), []
    for v in values:
        if v in seen and v not in repeated:
            repeated.append(v)
        seen.add(v)
    if repeated:
        raise ValueError(f"{name} repeats {', '.join(map(repr, repeated))}; give each entry once")
    if choices is not None:
        for v in values:
            if v not in choices:
                raise ValueError(f"unknown {name} entry {v!r}; choose from {tuple(choices)}")


def check_positive(**values: float) -> None:
    """Raises ValueError naming the first of ``values`` (name=value) that is not > 0."""
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive; got {value!r}")


# ----------------------------------------------------------------------------- atomic writes


class ResultsDirError(RuntimeError):
    """A results folder cannot be used by this run."""


class ResultsDirLocked(ResultsDirError):
    """Another live process holds the folder's lock."""


class ConfigMismatch(ResultsDirError):
    """The folder holds results of another configuration."""


class CachedPieceWarning(UserWarning):
    """A cached piece was unreadable or made by other settings; it is recomputed."""


def _fsync_dir(path: pathlib.Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder
        pass
    finally:
        os.close(fd)


def _tmp_name(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator[typing.BinaryIO]:
    """Opens a temporary file beside ``path`` for writing (binary); on success renames it to ``path``.

    The data is flushed and fsynced before the rename and the folder is
    fsynced after it, so after a crash ``path`` holds the old content or the
    new, never a part. On an exception the temporary file is removed and
    ``path`` is left as it was.
    """
    path = pathlib.Path(path)
    tmp = _tmp_name(path)
    f = open(tmp, "xb")
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, path)
    except BaseException:
        f.close()
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Writes ``data`` to ``path`` atomically (`atomic_open`)."""
    with atomic_open(path) as f:
        f.write(data)


def config_dict(config: Any) -> dict:
    """The config as a JSON-plain dict (tuples as lists, other objects as ``str``).

    Args:
        config: a dataclass instance, a NamedTuple or a mapping.

    Raises:
        TypeError: for anything else.
    """
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        d = dataclasses.asdict(config)
    elif hasattr(config, "_asdict"):
        d = config._asdict()
    elif isinstance(config, Mapping):
        d = dict(config)
    else:
        raise TypeError(f"config must be a dataclass, NamedTuple or mapping; got {type(config).__name__}")
    return json.loads(json.dumps(d, default=str))


def command_line(script: str, argv: Sequence[str]) -> str:
    """``"python <script> <argv ...>"``, each argument shell-quoted (`shlex.quote`): the command that
    reproduces a call, as an experiment's README and shipped weights record it (``script`` as given,
    e.g. ``"experiments/alphazero_dab.py"``; no arguments leave a trailing space)."""
    return f"python {script} " + " ".join(shlex.quote(a) for a in argv)


def config_key(*parts: Any) -> str:
    """An 8-hex-digit key of JSON-able ``parts`` (e.g. the settings that make a cached piece)."""
    return f"{zlib.crc32(json.dumps(parts, sort_keys=True, default=str).encode()):08x}"


def _field_defaults(config: Any) -> dict:
    if not (dataclasses.is_dataclass(config) and not isinstance(config, type)):
        return {}
    out = {}
    for f in dataclasses.fields(config):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        if dataclasses.is_dataclass(out.get(f.name)) and not isinstance(out[f.name], type):
            out[f.name] = dataclasses.asdict(out[f.name])
    return config_dict(out)


def _flat(d: Mapping, prefix: str = "") -> dict:
    """Nested dicts as one dict of dotted keys (``{"learner": {"a": 1}}`` -> ``{"learner.a": 1}``)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_differences(stored: Mapping, config: Any, *, neutral: Sequence[str] = NEUTRAL_FIELDS) -> list[str]:
    """The settings (one ``"name: here -> there"`` line each) in which ``config`` differs from a stored config.

    A setting in ``neutral`` is not compared. A setting the stored config
    lacks (a field added since) counts as equal when ``config`` has the
    field's default value.
    """
    current = _flat(config_dict(config))
    defaults = _flat(_field_defaults(config))
    stored = _flat(dict(stored))
    diffs = []
    for name in sorted(set(stored) | set(current)):
        if name in neutral:
            continue
        if name not in current:
            diffs.append(f"{name}: {stored[name]!r} in the folder, absent in this run")
        elif name not in stored:
            if name not in defaults or defaults[name] != current[name]:
                diffs.append(f"{name}: absent in the folder, {current[name]!r} in this run")
        elif stored[name] != current[name]:
            diffs.append(f"{name}: {stored[name]!r} in the folder, {current[name]!r} in this run")
    return diffs


BOOKKEEPING = (CONFIG_NAME, MANIFEST_NAME, LOCK_NAME)
"""File names that hold no result: a folder (or a checkpoint folder) with only these holds no work."""


def _bookkeeping_only(path: pathlib.Path) -> bool:
    """Whether every file at or under ``path`` is bookkeeping (`BOOKKEEPING`) or a temporary file."""
    if path.is_symlink() or not path.is_dir():
        return path.name in BOOKKEEPING or bool(_TMP_RE.match(path.name))
    return all(_bookkeeping_only(p) for p in path.iterdir())


class DirectoryLock:
    """An exclusive, non-blocking ``fcntl.flock`` on ``<folder>/.lock``, holding the owner's pid.

    The kernel drops the lock when the process exits or is killed, so a
    crashed run never leaves the folder locked (only the file). `release`
    deletes the file while still holding the lock; `acquire` therefore checks,
    once locked, that the file it locked is still the one at the path (same
    inode) and retries otherwise, so two runs never hold locks on two files.

    Raises (from `acquire`):
        ResultsDirLocked: another process holds it (message: folder and pid).
    """

    def __init__(self, folder: str | os.PathLike, *, what: str = "results folder"):
        self.folder = pathlib.Path(folder)
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> None:
        path = self.folder / LOCK_NAME
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                raise ResultsDirLocked(
                    f"{self.what} {self.folder} is in use by another run (pid {holder}); wait for it to finish, "
                    "or give this run another folder (out=...)"
                ) from None
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder deleted the file we locked: lock the one at the path now
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.folder / LOCK_NAME)
            except FileNotFoundError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


class ResultsDir:
    """The results folder of one run: lock, config check, atomic writes and checked cache loads.

    Use it as a context manager around everything a run writes::

        cfg = parse_config(Config, argv)                  # bad overrides fail here
        with ResultsDir(cfg.out, cfg, overwrite=cfg.overwrite) as rd:
            data = rd.load_npz("runs.npz", key=k)         # None: missing, unreadable or other settings
            if data is None:
                data = compute()
                rd.save_npz("runs.npz", data, key=k)
            rd.write_csv("table.csv", rows)
            rd.save_figure(fig, "figure.png", dpi=120)
            with rd.staging() as tmp:                     # for code that writes files itself
                write_tables(tmp)                         # each moved in atomically on success
            rd.write_text("README.md", text)

    Entering: creates the folder, takes the lock (`ResultsDirLocked` if held),
    removes temporary files of killed runs, compares ``config.json`` (if any)
    with ``config`` (`ConfigMismatch` if they differ, unless ``overwrite``),
    then writes ``config.json``. Leaving releases the lock; leaving by an
    exception from a folder that held no ``config.json`` before, while nothing
    but bookkeeping was written (`BOOKKEEPING`, in any sub-folder too: e.g. a
    checkpoint folder without a step), first removes what this run created
    (`discard_if_unused`), so the folder is as if the run had never started.

    Args:
        root: the folder (created with its parents).
        config: the run's settings (dataclass, NamedTuple or mapping).
        overwrite: replace another configuration's results: delete the files
            that run wrote (its ``.manifest.json``) before writing.
        neutral: settings that do not change results, not compared (default
            `NEUTRAL_FIELDS`).

    Attributes:
        path: the folder.
    """

    def __init__(self, root: str | os.PathLike, config: Any, *, overwrite: bool = False,
                 neutral: Sequence[str] = NEUTRAL_FIELDS):
        self.path = pathlib.Path(root)
        self.config = config
        self.overwrite = overwrite
        self.neutral = tuple(neutral)
        self._lock = DirectoryLock(self.path)
        self._manifest: list[str] = []
        self._fresh = False  # no run had claimed the folder before this one
        self._before: set[str] = set()  # the folder's entries before this run
        self._created: pathlib.Path | None = None  # the topmost folder this run created

    # -- lifecycle

    def __enter__(self) -> "ResultsDir":
        self.open()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        try:
            if exc_type is not None:
                self.discard_if_unused()
        finally:
            self.close()

    def open(self) -> "ResultsDir":
        """Lock, check and claim the folder (what entering the context does)."""
        missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
        self.path.mkdir(parents=True, exist_ok=True)
        self._created = missing[-1] if missing else None
        before = {p.name for p in self.path.iterdir()}
        self._lock.acquire()
        try:
            self._before = before
            self._fresh = CONFIG_NAME not in before
            self._remove_temporaries()
            self._manifest = self._read_manifest()
            self.check_config()
            self.write_json(CONFIG_NAME, config_dict(self.config))
        except BaseException:
            self._lock.release()
            raise
        return self

    def close(self) -> None:
        """Releases the lock."""
        self._lock.release()

    def discard_if_unused(self) -> bool:
        """Removes what this run created if it holds nothing but bookkeeping (a run that died before its first
        result or checkpoint), when the folder held no run before; returns whether it did.

        Only entries that were not in the folder before this run are removed,
        and only if every file under them is bookkeeping (`BOOKKEEPING` or a
        temporary file); then the folder itself (and the parents this run
        created) if that left it empty.
        """
        if not self._fresh or not self._lock.held or not self.path.is_dir():
            return False
        new = [p for p in self.path.iterdir() if p.name not in self._before]
        if not all(_bookkeeping_only(p) for p in new):
            return False
        for p in new:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        if self._created is not None:
            stop = self._created.parent
            folder = self.path
            while folder != stop:
                try:
                    folder.rmdir()  # only an empty folder
                except OSError:
                    break
                folder = folder.parent
        return True

    def _remove_temporaries(self) -> None:
        for item in self.path.iterdir():
            if _TMP_RE.match(item.name):
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item, ignore_errors=True)
                else:
                    item.unlink(missing_ok=True)

    def _read_manifest(self) -> list[str]:
        try:
            names = json.loads((self.path / MANIFEST_NAME).read_text())["files"]
            return [n for n in names if isinstance(n, str) and n == pathlib.Path(n).name]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as err:
            warnings.warn(f"{self.path / MANIFEST_NAME} is unreadable ({err}); starting a new one", CachedPieceWarning,
                          stacklevel=4)
            return []

    def check_config(self) -> None:
        """Raises `ConfigMismatch` if the folder's ``config.json`` holds other settings (nothing is written)."""
        config_path = self.path / CONFIG_NAME
        if not config_path.exists():
            return
        try:
            stored = json.loads(config_path.read_text())
            if not isinstance(stored, dict):
                raise ValueError("not a JSON object")
            diffs = config_differences(stored, self.config, neutral=self.neutral)
        except (OSError, ValueError) as err:
            diffs = [f"its {CONFIG_NAME} is unreadable ({err})"]
        if not diffs:
            return
        if not self.overwrite:
            raise ConfigMismatch(
                f"{self.path} holds results of another configuration:\n  " + "\n  ".join(diffs)
                + "\nGive this run another folder (out=...), or overwrite=true to replace those results "
                "(or rerun with the folder's settings to resume it)."
            )
        self._clear_previous(diffs)

    def _clear_previous(self, diffs: list[str]) -> None:
        """overwrite=True over another configuration: deletes the files its run wrote (its manifest)."""
        removed = []
        for name in self._manifest + [CONFIG_NAME]:
            target = self.path / name
            if target.is_file():
                target.unlink()
                removed.append(name)
        leftover = sorted(p.name for p in self.path.iterdir() if p.name not in (LOCK_NAME, MANIFEST_NAME))
        warnings.warn(
            f"overwrite=true: replacing the results of another configuration in {self.path} ({'; '.join(diffs)}); "
            f"deleted {len(removed)} files" + (f"; not written by a results run, kept: {', '.join(leftover)}"
                                               if leftover else ""),
            stacklevel=5,
        )
        self._manifest = []
        self._write_manifest()

    def _write_manifest(self) -> None:
        atomic_write_bytes(self.path / MANIFEST_NAME, (json.dumps({"files": self._manifest}, indent=1) + "\n").encode())

    def _claim(self, name: str) -> pathlib.Path:
        """The final path of ``name``, recorded in the manifest before anything is written there."""
        if not self._lock.held:
            raise ResultsDirError(f"{self.path} is not open; use `with ResultsDir(...) as rd:`")
        if name != pathlib.Path(name).name or name in ("", ".", "..", LOCK_NAME, MANIFEST_NAME):
            raise ValueError(f"a results file name must be a plain name inside the folder; got {name!r}")
        if name not in self._manifest:
            self._manifest.append(name)
            self._write_manifest()
        return self.path / name

    # -- writers

    @contextlib.contextmanager
    def open_write(self, name: str) -> Iterator[typing.BinaryIO]:
        """A binary file object; its content replaces ``name`` atomically when the block ends without error."""
        with atomic_open(self._claim(name)) as f:
            yield f

    def write_bytes(self, name: str, data: bytes) -> pathlib.Path:
        with self.open_write(name) as f:
            f.write(data)
        return self.path / name

    def write_text(self, name: str, text: str) -> pathlib.Path:
        """Writes ``text`` (UTF-8) as ``name``, atomically; returns the path."""
        return self.write_bytes(name, text.encode())

    def write_json(self, name: str, obj: Any) -> pathlib.Path:
        """Writes ``obj`` as indented JSON (non-JSON values as ``str``), atomically."""
        return self.write_text(name, json.dumps(obj, indent=2, default=str) + "\n")

    def write_csv(self, name: str, rows: Sequence[Mapping], fieldnames: Sequence[str] | None = None) -> pathlib.Path:
        """Writes dict rows as CSV with a header, atomically.

        ``fieldnames`` default: every key of the rows, in order of first
        appearance (a row without a key leaves its cell empty).

        Raises:
            ValueError: no rows and no ``fieldnames``.
        """
        if fieldnames is None:
            if not rows:
                raise ValueError(f"{name}: no rows and no fieldnames")
            fieldnames = list(dict.fromkeys(k for row in rows for k in row))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(fieldnames))
        w.writeheader()
        w.writerows(rows)
        return self.write_text(name, buf.getvalue())

    def save_npz(self, name: str, arrays: Mapping[str, Any], *, key: str | None = None) -> pathlib.Path:
        """Saves ``arrays`` as a compressed ``.npz``, atomically; ``key`` is stored for `load_npz` to check."""
        arrays = dict(arrays)
        if key is not None:
            arrays["__key__"] = np.asarray(key)
        with self.open_write(name) as f:
            np.savez_compressed(f, **arrays)
        return self.path / name

    def save_figure(self, fig, name: str, **savefig_kwargs) -> pathlib.Path:
        """``fig.savefig`` into ``name`` (format from its suffix), atomically."""
        with self.open_write(name) as f:
            fig.savefig(f, format=pathlib.Path(name).suffix.lstrip(".") or None, **savefig_kwargs)
        return self.path / name

    @contextlib.contextmanager
    def staging(self) -> Iterator[pathlib.Path]:
        """A temporary folder for code that writes files itself; on success each file is moved in atomically.

        Only plain files at the top of the staging folder are moved; it is
        deleted afterwards (also on an exception, when nothing is moved).

        Raises:
            ValueError: the code left a sub-folder in it.
        """
        if not self._lock.held:
            raise ResultsDirError(f"{self.path} is not open; use `with ResultsDir(...) as rd:`")
        tmp = self.path / f".staging.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        tmp.mkdir()
        try:
            yield tmp
            items = sorted(tmp.iterdir())
            for item in items:
                if not item.is_file():
                    raise ValueError(f"staging folder holds {item.name!r}, not a plain file")
            for item in items:
                with open(item, "rb") as f:
                    os.fsync(f.fileno())
                os.replace(item, self._claim(item.name))
            _fsync_dir(self.path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # -- cached pieces

    def _unreadable(self, path: pathlib.Path, err: BaseException) -> None:
        warnings.warn(f"cached piece {path} is unreadable ({type(err).__name__}: {err}); deleting it and recomputing",
                      CachedPieceWarning, stacklevel=3)
        path.unlink(missing_ok=True)

    def load_npz(self, name: str, *, key: str | None = None) -> dict[str, np.ndarray] | None:
        """A cached ``.npz`` as a dict of arrays, or None if it must be (re)computed.

        None when the file is missing; when it is unreadable (truncated,
        corrupt; then it is deleted with a `CachedPieceWarning`); or when
        ``key`` is given and differs from the key it was saved with (warns).
        """
        path = self.path / name
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}  # reads (and CRC-checks) every member
        except Exception as err:  # noqa: BLE001 - zipfile, zlib, numpy and OS errors all mean "unreadable"
            self._unreadable(path, err)
            return None
        stored = arrays.pop("__key__", None)
        if key is not None and (stored is None or str(stored) != key):
            warnings.warn(f"cached piece {path} was made by other settings (key {stored}, not {key}); recomputing",
                          CachedPieceWarning, stacklevel=2)
            return None
        return arrays

    def save_json(self, name: str, obj: Any, *, key: str | None = None) -> pathlib.Path:
        """Saves a JSON cached piece (``{"key": key, "value": obj}``), atomically."""
        return self.write_json(name, {"key": key, "value": obj})

    def load_json(self, name: str, *, key: str | None = None) -> Any | None:
        """The value saved by `save_json`, or None (missing, unreadable: warns and deletes; other ``key``: warns)."""
        path = self.path / name
        if not path.exists():
            return None
        try:
            payload = json.loads(path.read_text())
            stored, value = payload["key"], payload["value"]
        except Exception as err:  # noqa: BLE001
            self._unreadable(path, err)
            return None
        if key is not None and stored != key:
            warnings.warn(f"cached piece {path} was made by other settings (key {stored}, not {key}); recomputing",
                          CachedPieceWarning, stacklevel=2)
            return None
        return value


def output_dir(config, root: str | pathlib.Path) -> pathlib.Path:
    """Creates ``root`` and writes ``config.json`` into it (atomically).

    Prefer `ResultsDir`, which also locks the folder and refuses to mix
    configurations; this function does neither.
    """
    path = pathlib.Path(root)
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path / CONFIG_NAME, (json.dumps(config_dict(config), indent=2) + "\n").encode())
    return path
