"""YAML with line numbers, shared by manifests and eval cases.

ruamel's round-trip nodes remember where each key and item came from, so a pydantic
location can be turned into ``PATH:LINE: field: message`` for the person who wrote the file.
That parse is slow (pure Python, ~15 ms for a ten-action manifest), so ``load_fast`` reads
files that are fine through ruamel's C loader and the line-tracking parse runs only to
report what is wrong.
"""

from __future__ import annotations

from typing import Any

Loc = tuple[str | int, ...]


class YamlSyntaxError(ValueError):
    """The text is not YAML; ``line`` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


DEFAULT_MAX_ALIASES = 100
DEFAULT_MAX_NODES = 100_000


def load_all(text: str) -> list[Any]:
    """Every non-empty document, as ruamel round-trip nodes (they carry line numbers).

    Aliases are bounded, so a "billion laughs" file is refused before anything expands it:
    at most ``GIGI_YAML_MAX_ALIASES`` aliases (default 100) and ``GIGI_YAML_MAX_NODES``
    values (default 100,000) once every alias is expanded; an alias inside itself and
    nesting too deep to read are refused too.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    max_aliases = _limit("GIGI_YAML_MAX_ALIASES", DEFAULT_MAX_ALIASES)
    max_nodes = _limit("GIGI_YAML_MAX_NODES", DEFAULT_MAX_NODES)
    try:
        if "*" in text:  # no alias without an asterisk: the common case costs nothing
            _count_aliases(text, max_aliases)
        documents = [d for d in YAML(typ="rt").load_all(text) if d is not None]
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise YamlSyntaxError(line, str(exc.problem or exc.context)) from exc
    except YAMLError as exc:
        raise YamlSyntaxError(1, str(exc)) from exc
    except RecursionError:
        raise YamlSyntaxError(1, "the YAML is nested too deeply to read") from None
    for document in documents:
        _check_expanded_size(document, max_nodes)
    return documents


FAST_MAX_DEPTH = 64  # deeper documents take the line-tracking parse (the C composer recurses)


def load_fast(text: str) -> list[Any] | None:
    """Every non-empty document as plain values, through ruamel's C loader (about 10x faster).

    None whenever the line-tracking parse must decide: a syntax error, a limit exceeded, a
    ``%`` directive, nesting deeper than ``FAST_MAX_DEPTH``. The caller then runs
    ``load_all``, so errors keep their lines and nothing is accepted that it refuses. Without
    ``ruamel.yaml.clib`` the same safe loader runs in pure Python (correct, barely faster).
    """
    loader = _fast_loader()
    if text.startswith("%") or "\n%" in text:
        return None  # a %YAML directive changes the schema; the C loader would ignore it
    try:
        if not _shallow(text, loader, _limit("GIGI_YAML_MAX_ALIASES", DEFAULT_MAX_ALIASES)):
            return None
        documents = [d for d in loader.load_all(text) if d is not None]
        max_nodes = _limit("GIGI_YAML_MAX_NODES", DEFAULT_MAX_NODES)
        for document in documents:
            _check_expanded_size(document, max_nodes)
    except Exception:  # any refusal is reported by the line-tracking parse
        return None
    return documents


def limits() -> tuple[int, int]:
    """The YAML limits in force: a cached validation is only valid under the same ones."""
    return (
        _limit("GIGI_YAML_MAX_ALIASES", DEFAULT_MAX_ALIASES),
        _limit("GIGI_YAML_MAX_NODES", DEFAULT_MAX_NODES),
    )


_RESOLVER: list[Any] = []  # the resolver class, built on first use


def has_c_loader() -> bool:
    """Whether ruamel.yaml.clib is installed (a dependency; without it start-up is slow)."""
    return bool(_fast_loader().Parser.__name__ == "CParser")


def _fast_loader() -> Any:
    """A new safe loader each time: a YAML object keeps per-load state (not thread-safe)."""
    from ruamel.yaml import YAML

    if not _RESOLVER:
        from ruamel.yaml.resolver import VersionedResolver

        class Yaml12Resolver(VersionedResolver):
            """YAML 1.2 always (directives are routed away): skips a lookup per scalar."""

            @property
            def processing_version(self) -> Any:
                return (1, 2)

        _RESOLVER.append(Yaml12Resolver)
    yaml = YAML(typ="safe", pure=False)
    yaml.Resolver = _RESOLVER[0]
    return yaml


def _shallow(text: str, loader: Any, max_aliases: int) -> bool:
    """Nesting and aliases within bounds, read from the C parser's events (no recursion)."""
    from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent

    depth = aliases = 0
    for event in loader.parse(text):
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > FAST_MAX_DEPTH:
                return False
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
        elif isinstance(event, AliasEvent):
            aliases += 1
            if aliases > max_aliases:
                return False
    return True


def _limit(var: str, default: int) -> int:
    import os

    raw = os.environ.get(var)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        from gigi_core.errors import ConfigError

        raise ConfigError(f"{var}: {raw!r} is not a whole number (0 or more)")
    return value


def _count_aliases(text: str, limit: int) -> None:
    from ruamel.yaml import YAML
    from ruamel.yaml.events import AliasEvent

    count = 0
    for event in YAML(typ="rt").parse(text):
        if isinstance(event, AliasEvent):
            count += 1
            if count > limit:
                line = event.start_mark.line + 1 if event.start_mark else 1
                raise YamlSyntaxError(
                    line, f"more than {limit} aliases (GIGI_YAML_MAX_ALIASES); write the values out"
                )


def _check_expanded_size(document: Any, limit: int) -> None:
    """Count values as if every alias were expanded (shared nodes counted once each use)."""
    sizes: dict[int, int] = {}  # id(container) -> expanded size, for shared (aliased) nodes
    # An explicit stack, no recursion: (node, its children not yet visited, running total).
    open_ids: set[int] = set()
    stack: list[tuple[Any, Any, int]] = []

    def enter(node: Any) -> int | None:
        """The size of a leaf or an already-sized container; None when it must be walked."""
        if not isinstance(node, dict | list):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in open_ids:
            raise YamlSyntaxError(_line(node), "an alias refers to itself (a recursive value)")
        open_ids.add(id(node))
        stack.append((node, iter(node.values() if isinstance(node, dict) else node), 1))
        return None

    if enter(document) is not None:
        return
    while stack:
        node, children, total = stack[-1]
        child = next(children, _DONE)
        if child is _DONE:
            stack.pop()
            open_ids.discard(id(node))
            sizes[id(node)] = total
            if stack:
                parent, rest, parent_total = stack[-1]
                stack[-1] = (parent, rest, _bounded(parent_total + total, limit, parent))
            continue
        size = enter(child)
        if size is not None:
            stack[-1] = (node, children, _bounded(total + size, limit, node))


_DONE = object()


def _bounded(total: int, limit: int, node: Any) -> int:
    if total > limit:
        raise YamlSyntaxError(
            _line(node),
            f"the YAML expands to more than {limit:,} values once its aliases are expanded "
            "(GIGI_YAML_MAX_NODES)",
        )
    return total


def _line(node: Any) -> int:
    return (getattr(getattr(node, "lc", None), "line", 0) or 0) + 1


def plain(node: Any) -> Any:
    """ruamel's round-trip nodes to plain dicts, lists and scalars (for pydantic and schemas).

    Its scalar subclasses (``ScalarInt`` for ``0``, ``ScalarFloat``, ``HexInt`` ...) are not
    accepted by jsonschema-rs as JSON numbers, so a schema bound like ``minimum: 0`` would
    be refused as invalid: every scalar becomes its builtin type.
    """
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    for kind in (int, float, str):
        if isinstance(node, kind):
            return kind(node)
    return node


def problem(name: str, data: Any, loc: Loc, msg: str, kind: str, root: str) -> str:
    """One ``PATH:LINE: field: message`` line from a pydantic error (or our own check)."""
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or "-" in p)))
    field = ".".join(str(p) for p in loc) or root
    if kind == "missing":
        msg = "required field is missing"
    elif kind == "extra_forbidden":
        msg = "unknown field"
    elif msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{name}:{line_of(data, loc)}: {field}: {msg}"


def line_of(data: Any, loc: Loc) -> int:
    """The 1-based line of the deepest part of ``loc`` present in the document."""
    line = getattr(getattr(data, "lc", None), "line", 0) or 0
    node = data
    for part in loc:
        try:
            if isinstance(node, dict) and part in node:
                line = node.lc.key(part)[0]
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                line = node.lc.item(part)[0]
                node = node[part]
            else:
                break
        except (AttributeError, KeyError, TypeError):
            break
    return line + 1
