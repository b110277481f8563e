"""The argument parser class every `tierlog` (sub)command uses.

argparse reports a bad command line as a usage block plus an error line; the
`tierlog` command promises exactly one line per error, so `CliArgumentParser`
raises `UsageError` instead and `main` prints it with a pointer to --help.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tierlog.cli.errors import UsageError

__all__ = ["CliArgumentParser", "HelpFormatter", "SubcommandParser"]


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

    def error(self, message: str):
        flat = " ".join(message.split())
        raise UsageError(f"{flat} (see '{self.prog} --help')")


class SubcommandParser(CliArgumentParser):
    """The parser of a subcommand: arguments it does not know are its usage error, and so are
    the complaints of its finishers (``add_finisher``: checks and derived values that need
    several arguments at once, run after parsing; they raise ArgumentTypeError)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._finishers: list[Callable[[argparse.Namespace], None]] = []

    def add_finisher(self, finisher: Callable[[argparse.Namespace], None]) -> None:
        self._finishers.append(finisher)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        for finish in self._finishers:
            try:
                finish(namespace)
            except argparse.ArgumentTypeError as exc:
                self.error(str(exc))
        return namespace, extras
