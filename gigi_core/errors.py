"""The kernel's error hierarchy: each error carries what the user needs to fix it."""

from __future__ import annotations

#: The surfaces a hint can speak the syntax of: the ``gigi`` command line, the console
#: REPL (``/memory enable channel=C``) and Discord's slash commands (``channel:``).
SURFACES = frozenset({"shell", "console", "discord"})


class Hint(str):
    """How to fix an error, in the syntax of the surface that shows it (a message naming a
    channel can vary too: ``<#123>`` on Discord, ``channel 123`` in a shell).

    As a string it is the default form (for any surface without its own variant);
    ``on(surface)`` picks the variant for ``shell``, ``console`` or ``discord``. It passes
    through wrapping errors unchanged, so the surface that finally shows it chooses.
    """

    variants: dict[str, str]

    def __new__(cls, default: str, **variants: str) -> Hint:
        unknown = set(variants) - SURFACES
        if unknown:
            raise ValueError(f"Hint: unknown surface(s) {sorted(unknown)}; use {sorted(SURFACES)}")
        hint = super().__new__(cls, default)
        hint.variants = variants
        return hint

    def on(self, surface: str | None) -> str:
        return self.variants.get(surface or "", str.__str__(self))


class GigiError(Exception):
    """Base of every error Gigi raises on purpose; ``str()`` is a sentence for a human."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.text_for(None)

    def text_for(self, surface: str | None) -> str:
        """The sentence with its hint in ``surface``'s syntax (a ``Hint``'s variant)."""
        hint = self.hint.on(surface) if isinstance(self.hint, Hint) else self.hint
        message = self.message.on(surface) if isinstance(self.message, Hint) else self.message
        return f"{message} ({hint})" if hint else message


class ManifestError(GigiError):
    """A manifest is invalid; ``problems`` holds one ``PATH:LINE: field: message`` each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class PluginError(GigiError):
    """A plugin could not be loaded or does not match its manifest."""


class ConfigError(GigiError):
    """Per-guild plugin configuration is invalid or names something unknown."""

    exit_code = 2


class ToolError(GigiError):
    """Base of the errors of the deterministic tool-call path."""


class UnknownAction(ToolError):
    """No loaded manifest declares the action."""

    exit_code = 2


class InvalidArguments(ToolError):
    """Arguments failed the action's JSON Schema; ``field`` names the offending path."""

    exit_code = 2

    def __init__(self, action: str, field: str, message: str) -> None:
        where = field or "(arguments)"
        super().__init__(f"invalid arguments for {action}: {where}: {message}")
        self.action = action
        self.field = field
        self.detail = message


class PolicyDenied(ToolError):
    """The policy engine denied the call; ``reason`` is readable by the user."""

    exit_code = 3

    def __init__(self, action: str, reason: str) -> None:
        super().__init__(f"{action} denied: {reason}")
        self.action = action
        self.reason = reason


class ConfirmationRequired(ToolError):
    """The call needs a confirmation before it may run."""

    exit_code = 4

    def __init__(self, action: str, reason: str, run_id: str | None = None) -> None:
        super().__init__(f"{action} needs confirmation: {reason}")
        self.action = action
        self.reason = reason
        self.run_id = run_id


class ToolExecutionError(ToolError):
    """The handler raised, timed out or returned data that is not JSON; details go to the log."""

    exit_code = 5


class StoreError(GigiError):
    """The database cannot be reached or migrated."""


class SecretsError(GigiError):
    """Sealing or unsealing a secret failed (no key, wrong key, tampered row)."""
