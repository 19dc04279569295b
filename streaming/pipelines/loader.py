"""Find and load the pipeline a ``--pipeline`` names: a preset, a file or a module, its
parts checked against the contract (:mod:`streaming.pipelines.contract`).

The presets (:mod:`streaming.pipelines.presets`) import the contract's settings; the loader
sits above both, so neither imports the other back.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

from streaming.pipelines.contract import GUARANTEES, Pipeline, PipelineError
from streaming.pipelines.presets import PRESETS
from verifier.rundata.pipeline_file import read_contract

#: a pipeline's name (its report column ``pipeline:<name>``)
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def split_specs(text: str) -> list[str]:
    """``--pipeline a,b`` -> ``["a", "b"]`` (order kept, no repeats)."""
    out = [s.strip() for s in text.split(",") if s.strip()]
    if not out:
        raise PipelineError(f"--pipeline {text!r}: expected a preset, FILE.py[:function] "
                            "or module:function")
    return list(dict.fromkeys(out))


def load_pipeline(spec: str, guarantee: str | None = None) -> Pipeline:
    """Load what ``spec`` names and check its parts (not the writer: that needs Spark,
    see :func:`check_writer`). ``guarantee`` (``--pipeline-guarantee``) replaces the
    module's ``GUARANTEE``."""
    if spec in PRESETS:
        module, func, name = PRESETS[spec], "build", spec
    else:
        module, func, name = _import(spec)
    build = getattr(module, func, None)
    if not callable(build):
        raise PipelineError(f"pipeline {spec}: no function {func}(spark, source)")
    claimed = guarantee or getattr(module, "GUARANTEE", None)
    if claimed is not None and claimed not in GUARANTEES:
        raise PipelineError(f"pipeline {spec}: GUARANTEE {claimed!r} is not one of "
                            f"{', '.join(GUARANTEES)}")
    read_output = getattr(module, "read_output", None)
    if read_output is not None and not callable(read_output):
        raise PipelineError(f"pipeline {spec}: read_output is not a function")
    contract = read_contract(module, f"pipeline {spec}")
    return Pipeline(name=name, spec=spec, build=build, guarantee=claimed,
                    read_output=read_output, value_column=contract.trace_column,
                    file=contract)


def _import(spec: str):
    """A file (``x.py`` or ``x.py:f``) or a module (``pkg.mod:f``)."""
    target, _, func = spec.partition(":")
    func = func or "build"
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise PipelineError(f"pipeline {spec}: no such file {path}")
        mod_name = f"verifier_user_pipeline_{_column_name(path.stem).replace('-', '_')}"
        # two functions of one file are two columns: ``x.py:micro_batch`` is x-micro-batch
        name = _column_name(path.stem if func == "build" else f"{path.stem}-{func}")
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise PipelineError(f"pipeline {spec}: cannot load {path}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module  # foreachBatch functions pickle by module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's code: say what broke
            raise PipelineError(f"pipeline {spec}: importing {path} failed: "
                                f"{type(exc).__name__}: {exc}") from None
        return module, func, name
    if not _is_dotted(target):
        raise PipelineError(f"pipeline {spec!r}: not a preset, a .py file or "
                            "module:function")
    try:
        module = importlib.import_module(target)
    except Exception as exc:  # noqa: BLE001 - the user's code: say what broke
        raise PipelineError(f"pipeline {spec}: importing {target} failed: "
                            f"{type(exc).__name__}: {exc}") from None
    stem = target.rsplit(".", 1)[-1]
    return module, func, _column_name(stem if func == "build" else f"{stem}-{func}")


def _is_dotted(text: str) -> bool:
    return bool(text) and all(p.isidentifier() for p in text.split("."))


def _column_name(stem: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-") or "pipeline"
    return name if _NAME.match(name) else f"p-{name}"


__all__ = ["load_pipeline", "split_specs"]
