"""Capabilities the kernel itself defines; plugin manifests may require these without declaring them."""

from __future__ import annotations

from gigi_core.manifest.models import CapabilitySpec

KERNEL_CAPABILITIES: tuple[CapabilitySpec, ...] = (
    CapabilitySpec(
        name="plugins.read", description="See which plugins are enabled", default="everyone"
    ),
    CapabilitySpec(name="plugins.manage", description="Enable, disable and configure plugins"),
    CapabilitySpec(name="grants.manage", description="Grant and revoke capabilities"),
    CapabilitySpec(
        name="permissions.read", description="Ask whether an action is allowed", default="everyone"
    ),
    CapabilitySpec(name="memory.read.guild", description="Count and search opted-in guild memory"),
    CapabilitySpec(name="memory.manage.guild", description="Opt channels in and purge memory"),
    CapabilitySpec(name="llm.usage.read", description="See LLM usage aggregates"),
    CapabilitySpec(name="llm.provider.write", description="Add and revoke LLM credentials"),
    CapabilitySpec(name="llm.provider.select", description="Choose model profiles"),
    CapabilitySpec(name="llm.provider.test", description="Test LLM credentials"),
    CapabilitySpec(name="agent.use", description="Talk to the agent", default="everyone"),
)

KERNEL_CAPABILITY_NAMES: frozenset[str] = frozenset(c.name for c in KERNEL_CAPABILITIES)


def matches(granted: str, capability: str) -> bool:
    """A grant covers a capability exactly, or by wildcard: ``dice.*`` or ``*``."""
    if granted in ("*", capability):
        return True
    if granted.endswith(".*"):
        return capability.startswith(granted[:-1])
    return False
