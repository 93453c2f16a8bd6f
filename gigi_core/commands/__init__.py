"""Manifest-declared commands: one table every surface renders and runs on the direct path."""

from gigi_core.commands.parse import parse_arguments, usage
from gigi_core.commands.spec import CommandShapeError, CommandSpec, OptionSpec, command_options
from gigi_core.commands.table import CommandTable, build_table

__all__ = [
    "CommandShapeError",
    "CommandSpec",
    "CommandTable",
    "OptionSpec",
    "build_table",
    "command_options",
    "parse_arguments",
    "usage",
]
