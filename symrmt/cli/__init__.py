"""The command line ``symrmt``: :func:`symrmt.cli.app.main` and one module per group of commands.

:mod:`~symrmt.cli.app` (the parser and the exit codes), :mod:`~symrmt.cli.common` (options and
printing shared by the commands), :mod:`~symrmt.cli.model` (``limit``, ``simulate``, ``compare``
and the like), :mod:`~symrmt.cli.sweeps`, :mod:`~symrmt.cli.trace`, :mod:`~symrmt.cli.trace_sweep`,
:mod:`~symrmt.cli.density` and :mod:`~symrmt.cli.tools`.
"""

__all__: list[str] = []
