"""The fast (C) YAML path gives exactly what the line-tracking parse gives, or steps aside."""

from __future__ import annotations

from pathlib import Path

import pytest

from gigi_core import __version__
from gigi_core.errors import ManifestError
from gigi_core.manifest import loader
from gigi_core.policy.capabilities import KERNEL_CAPABILITY_NAMES
from gigi_core.yamlfile import FAST_MAX_DEPTH, has_c_loader, load_all, load_fast, plain

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = sorted(
    p
    for pattern in ("manifests/**/gigi.yaml", "plugins/*/*/gigi.yaml", "contrib/*/*/gigi.yaml")
    for p in ROOT.glob(pattern)
)

SAME = [
    "a: 1\nb: 0x1F\nc: 0o17\nd: 1_000\ne: 017\nf: -.5\ng: .inf\nh: 1e3\n",
    "a: yes\nb: no\nc: on\nd: off\ne: true\nf: False\ng: ~\nh: null\ni: ''\n",
    "a: 1:20\nb: 2024-01-02\nc: '2024-01-02'\nd: 12:30:00\n",
    "base: &b {x: 1, y: [1, 2]}\nuse: {<<: *b, z: 3}\nlist: [*b, *b]\n",
    "- a\n- {b: c, d: [e, f]}\n- - nested\n  - more\n",
    "text: |\n  line one\n  line two\nfolded: >\n  folded\n  text\n",
    '"quoted key": "tab\\there"\nplain: a:b c#d, e\nurl: http://x.y/z?q=1\n',
    "7: int key\ntrue: bool key\n3.5: float key\n",
    "---\na: 1\n---\nb: 2\n...\n",
    "a: 'single ''quoted'''\nb: \"\\u00e9\\n\"\nc: émoji 🎲\n",
    "# only a comment\n",
    "",
]


def typed(value):
    """Values with their types, so an int that became a float or a str is caught."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("text", SAME)
def test_fast_and_line_tracking_parses_agree(text: str) -> None:
    fast = load_fast(text)
    assert fast is not None
    assert typed(plain(fast)) == typed(plain(load_all(text)))


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_manifest_loads_the_same_either_way(path: Path) -> None:
    text = path.read_text()
    fast = load_fast(text)
    if fast is None:  # a file being edited may be broken; then the fast path must step aside
        with pytest.raises(Exception):  # noqa: B017 - whatever load_all raises
            load_all(text)
        return
    assert typed(plain(fast)) == typed(plain(load_all(text)))
    args = (str(path), text, KERNEL_CAPABILITY_NAMES, __version__)
    try:
        slow = loader._validate_with_lines(*args)
    except ManifestError as exc:
        with pytest.raises(ManifestError) as fast_error:
            loader._validate(*args)
        assert fast_error.value.problems == exc.problems
    else:
        assert loader._validate(*args) == slow


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n",  # a syntax error
        "a: 1\na: 2\n",  # a duplicate key
        "%YAML 1.1\n---\na: yes\n",  # a directive changes the schema
        "a: " + "[" * (FAST_MAX_DEPTH + 1) + "]" * (FAST_MAX_DEPTH + 1) + "\n",
        "a: !!python/object:os.system x\n",
        "a: &a [1, *a]\n",  # refers to itself
    ],
    ids=["syntax", "duplicate", "directive", "deep", "unsafe-tag", "recursive"],
)
def test_the_fast_path_steps_aside_for_what_the_line_tracking_parse_must_judge(
    text: str,
) -> None:
    assert load_fast(text) is None


def test_nesting_far_too_deep_for_the_c_composer_is_refused_without_crashing() -> None:
    """The C composer recurses without a guard (a segfault at ~100,000 levels)."""
    deep = 200_000
    assert load_fast("a: " + "[" * deep + "]" * deep + "\n") is None
    assert load_fast("a:\n" + "".join("  " * i + "- \n" for i in range(1, 2000))) is None


def test_limits_in_force_apply_to_the_fast_path(monkeypatch) -> None:
    text = "a: &a 1\nb: [*a, *a, *a, *a]\n"
    assert load_fast(text) == [{"a": 1, "b": [1, 1, 1, 1]}]
    monkeypatch.setenv("GIGI_YAML_MAX_ALIASES", "3")
    assert load_fast(text) is None
    monkeypatch.setenv("GIGI_YAML_MAX_ALIASES", "100")
    monkeypatch.setenv("GIGI_YAML_MAX_NODES", "4")
    assert load_fast(text) is None


def test_the_c_loader_is_installed() -> None:
    """ruamel.yaml.clib is a dependency: without it manifests parse ~7x slower at start-up."""
    assert has_c_loader(), "install ruamel.yaml.clib (declared in pyproject.toml)"
