"""The argument parser class every `tierlog` (sub)command uses.

argparse reports a bad command line as a usage block plus an error line; the
`tierlog` command promises exactly one line per error, so `CliArgumentParser`
raises `UsageError` instead and `main` prints it with a pointer to --help.
"""

from __future__ import annotations

import argparse

from tierlog.cli.errors import UsageError

__all__ = ["CliArgumentParser", "HelpFormatter"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps hand-written epilog examples as written; shows defaults."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        show = default not in (None, False, argparse.SUPPRESS, [])
        if show and "%(default)" not in text and action.option_strings:
            text += " (default: %(default)s)"
        return text


class CliArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, raised as UsageError.

    The line points at the help of the (sub)command whose command line it is:
    argparse leaves arguments a subcommand does not know to the top-level
    parser, which would point at ``tierlog --help``; a subcommand's parser
    (``SubcommandParser``) reports them itself.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", SubcommandParser)
        return super().add_subparsers(**kwargs)

    def error(self, message: str):  # type: ignore[override]
        flat = " ".join(message.split())
        raise UsageError(f"{flat} (see '{self.prog} --help')")


class SubcommandParser(CliArgumentParser):
    """The parser of a subcommand: arguments it does not know are its usage error."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras
