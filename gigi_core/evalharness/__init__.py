"""Golden cases for the agent runtime: YAML in, pass/fail with readable diffs out.

    results = await run_cases(["evals"])            # every *.yaml under evals/
    results = await run_cases(["my_cases.yaml"], database_url="postgresql+psycopg://...")

Each case gets a fresh kernel, plants canaries and fails if one leaks into a table or log.
See docs/evals.md.
"""

from gigi_core.evalharness.canary import SEALED_COLUMNS, Canaries, Leak
from gigi_core.evalharness.loading import LoadedCase, load_cases
from gigi_core.evalharness.models import Case
from gigi_core.evalharness.plugin import EvalKit
from gigi_core.evalharness.runner import CaseResult, EvalContext, run_case, run_cases
from gigi_core.evalharness.yamlfile import CaseFileError

__all__ = [
    "SEALED_COLUMNS",
    "Canaries",
    "Case",
    "CaseFileError",
    "CaseResult",
    "EvalContext",
    "EvalKit",
    "Leak",
    "LoadedCase",
    "load_cases",
    "run_case",
    "run_cases",
]
