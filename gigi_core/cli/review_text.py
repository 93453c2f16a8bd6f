"""The install review and the upgrade diff as people read them in a terminal.

Every line may quote what a plugin's author wrote, so each passes ``visible``: a terminal
control sequence in a manifest could otherwise hide or rewrite the lines after it.
"""

from __future__ import annotations

import unicodedata

from gigi_core.manifest.diff import DistributionDiff, PluginDiff, PluginReview

CONFIRMS = {True: "asks for confirmation", False: "no confirmation"}
#: Invisible characters that reorder what follows (bidirectional overrides and isolates).
BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def visible(text: str) -> str:
    """``text`` with control characters (C0 but newline and tab, so ESC too; DEL; C1;
    bidirectional overrides) shown as escapes (``\\x1b``), so a terminal prints them instead
    of obeying them; a newline indents what follows under the line it belongs to."""
    out = []
    for ch in text:
        if ch in "\n\t":
            out.append("\n        " if ch == "\n" else ch)
        elif ch in BIDI or unicodedata.category(ch) == "Cc":
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def review_lines(review: PluginReview) -> list[str]:
    """Everything a fresh plugin asks for, one fact a line, as printed."""
    return [visible(line) for line in _review(review)]


def _review(review: PluginReview) -> list[str]:
    lines = [f"  plugin {review.name} {review.version}: {review.description}"]
    lines.append(f"    stores: {review.data_statement}")
    if review.actions:
        lines.append("    actions:")
        for a in review.actions:
            who = {"everyone": "everyone by default", "admins": "admins unless granted"}.get(
                a.capability_default, "a kernel capability"
            )
            extra = [CONFIRMS[a.confirms]]
            if a.public_dispatch:
                extra.append("public dispatch")
            if not a.offered_to_model:
                extra.append("command only")
            if a.command:
                extra.append(f"command /{a.command}")
            lines.append(
                f"      {a.name}: {a.safety}, needs {a.capability} ({who}); {', '.join(extra)}"
            )
    else:
        lines.append("    actions: none (a provider, surface or retriever only)")
    if review.everyone:
        lines.append(f"    granted to everyone by default: {', '.join(review.everyone)}")
    lines.append(f"    Discord intents: {', '.join(review.intents) or 'none'}")
    lines.append(f"    Discord permissions: {', '.join(review.discord_permissions) or 'none'}")
    lines.append(f"    config secrets it asks for: {', '.join(review.secrets) or 'none'}")
    if review.dm_events:
        lines.append("    receives direct-message events")
    return lines


def diff_lines(diff: PluginDiff) -> list[str]:
    """What an upgrade changes in one plugin, as printed; widened actions marked as held."""
    return [visible(line) for line in _diff(diff)]


def _diff(diff: PluginDiff) -> list[str]:
    head = f"  plugin {diff.name}: {diff.old_version or '(new)'} -> {diff.new_version or '(gone)'}"
    if not diff.changed:
        return [f"{head}: nothing it may do changed"]
    lines = [head]
    lines += [f"    {change}" for change in diff.plugin_changes]
    for change in diff.actions:
        mark = "HELD BACK until accepted per server" if change.widened else "changed"
        lines.append(f"    {change.action} ({mark}):")
        lines += [f"      {c}" for c in change.changes]
    lines += [f"    removed: {name}" for name in diff.removed]
    return lines


def distribution_lines(
    dist: DistributionDiff, reviews: dict[str, PluginReview], sources: list[str]
) -> list[str]:
    """A fresh install's full review, or an upgrade's diff, for one distribution (every
    line visible: see ``visible``)."""
    if dist.old_version is None:
        lines = [f"{dist.distribution} {dist.new_version} (new install)"]
        if not reviews:
            lines.append("  declares no packaged manifest: nothing to review before it loads")
        for name in sorted(reviews):
            lines += _review(reviews[name])
    else:
        lines = [f"{dist.distribution} {dist.old_version} -> {dist.new_version}"]
        for plugin in dist.plugins:
            lines += _diff(plugin)
        if dist.widens:
            lines.append(
                "  Widened actions stay off in every server until an admin accepts them "
                "(gigi plugins review PLUGIN --guild G --accept, or /gigi plugins review)."
            )
    lines += [f"  manifest: {s}" for s in sources]
    return [visible(line) for line in lines]
