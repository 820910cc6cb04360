"""Command line: ``python -m dpviz <command>``.

Errors print one line ``error: ...`` on stderr and exit with status 2.

The public face is :func:`main` (the ``dpviz`` console script and ``python -m dpviz``)
and :func:`build_parser`. The parser is built from one module per command group, each
exposing ``add_parsers(subparsers)`` and its ``cmd_*`` handlers:

- :mod:`dpviz.cli.audit`: ``depth``, ``mechanism``, ``audit``, ``attack``
- :mod:`dpviz.cli.evaluate`: ``evaluate``, ``sweep``, ``reproduce``
- :mod:`dpviz.cli.train`: ``train``, ``predict``, ``update``
- :mod:`dpviz.cli.data`: ``info``

They share :mod:`dpviz.cli.common` (argument types, option groups, warnings),
:mod:`dpviz.cli.reading` (the CSV, its schema and encoding) and :mod:`dpviz.cli.work`
(a forest's depth and work before it runs); none of them imports this module.

The CLI sits at the top of the layering, beside :mod:`dpviz.distributed`: it may import
every layer (privacy ← models ← evaluation ← figures ← app); no layer imports it. What
a command releases is a ledger's release or post-processing of one; what it reads from
the records for the user (notes, diagnostics) goes to stderr, labelled.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from dpviz.cli import audit, data, evaluate, train
from dpviz.cli.common import CliError, json_safe
from dpviz.evaluation.sweep import SweepCancelled
from dpviz.privacy.schema import PrivacyLeakWarning

__all__ = ["build_parser", "main"]

# The command groups in the order --help lists their subcommands.
GROUPS = (audit, evaluate, train, data)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise CliError(message)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m dpviz`` parser: one subparser per subcommand, each naming its
    ``cmd_*`` function as ``func``."""
    parser = _Parser(prog="python -m dpviz", description="Differentially private random forests.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


def _join_negative_values(argv: list[str]) -> list[str]:
    """argparse reads "-inf" or "-1e-3" after an option as another option: join them."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        negative = nxt[:1] == "-" and (nxt[1:2].isdigit() or nxt[1:] in ("inf", "nan"))
        if arg.startswith("--") and "=" not in arg and negative:
            out.append(f"{arg}={nxt}")
            skip = True
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run one ``python -m dpviz`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 2 after one line ``error: ...`` on stderr (a user error,
        never a traceback).
    """
    argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        try:
            args = parser.parse_args(argv)
            result = args.func(args)
        except (CliError, ValueError, OSError, SweepCancelled) as exc:
            _flush_warnings(caught)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"error: {message}", file=sys.stderr)
            return 2
        except (OverflowError, ZeroDivisionError, RecursionError) as exc:
            # A safety net: every input is bounded, so this is a bug, but never a traceback.
            _flush_warnings(caught)
            print(
                f"error: cannot compute with these inputs ({type(exc).__name__}: {exc}); use "
                "smaller numbers and please report this",
                file=sys.stderr,
            )
            return 2
        except MemoryError:
            print(
                "error: out of memory; use fewer trees, a smaller depth or fewer rows",
                file=sys.stderr,
            )
            return 2
    _flush_warnings(caught)
    if result:
        _emit(result, getattr(args, "json", False))
    return 0


def _flush_warnings(caught) -> None:
    for w in caught:
        if issubclass(w.category, PrivacyLeakWarning):
            print(f"warning: {w.message}", file=sys.stderr)


def _emit(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(json_safe(result)))
        return
    _emit_lines(result, "")


def _emit_lines(result: dict, prefix: str) -> None:
    """One line per entry; nested entries as ``outer.inner``, a mean ± std on one line."""
    for key, value in result.items():
        name = prefix + key
        if isinstance(value, dict) and {"mean", "std"} <= value.keys():
            print(f"{name:>26}: {value['mean']:.4f} ± {value['std']:.4f}")
        elif isinstance(value, dict):
            _emit_lines(value, name + ".")
        else:
            print(f"{name:>26}: {value}")
