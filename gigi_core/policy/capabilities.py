"""Capabilities the kernel itself defines; plugin manifests may require these without declaring them."""

from __future__ import annotations

from gigi_core.manifest.models import CapabilitySpec


def _cap(name: str, description: str, default: str = "admins") -> CapabilitySpec:
    return CapabilitySpec(name=name, description=description, default=default)  # type: ignore[arg-type]


KERNEL_CAPABILITIES: tuple[CapabilitySpec, ...] = (
    _cap("plugins.read", "See which plugins are enabled", "everyone"),
    _cap("plugins.manage", "Enable, disable and configure plugins"),
    _cap("grants.manage", "Grant and revoke capabilities"),
    _cap("permissions.read", "Ask whether an action is allowed", "everyone"),
    _cap("memory.read.guild", "Count and search opted-in guild memory"),
    _cap("memory.manage.guild", "Opt channels in and purge memory"),
    _cap("llm.usage.read", "See LLM usage aggregates"),
    _cap("llm.provider.write", "Add and revoke LLM credentials"),
    _cap("llm.provider.select", "Choose model profiles"),
    _cap("llm.provider.test", "Test LLM credentials"),
    _cap("agent.use", "Talk to the agent", "everyone"),
    _cap("gigi.channel.manage", "Pause, resume or secure what Gigi observes in a channel"),
    _cap("gigi.privacy.self", "See, export and delete your own data", "everyone"),
    _cap("gigi.jobs.manage", "See, cancel and retry this server's background jobs"),
    _cap("audit.read", "Read this server's audit log (metadata only)"),
)

KERNEL_CAPABILITY_NAMES: frozenset[str] = frozenset(c.name for c in KERNEL_CAPABILITIES)


def matches(granted: str, capability: str) -> bool:
    """A grant covers a capability exactly, or by wildcard: ``dice.*`` or ``*``."""
    if granted in ("*", capability):
        return True
    if granted.endswith(".*"):
        return capability.startswith(granted[:-1])
    return False
