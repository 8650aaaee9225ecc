"""The test suite, a package so that ``from tests.reference ...`` and ``from tests.experiment_helpers ...``
resolve to this directory and not to an installed top-level ``tests`` package (Pgx 2.6 ships one).

pytest (default ``prepend`` import mode) puts the directory above this one first on ``sys.path``
and imports every test module as ``tests.<name>``; `tests/test_suite_imports.py` checks it.
"""
