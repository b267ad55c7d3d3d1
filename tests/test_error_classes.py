"""Every error the package defines derives from `xe.XlaExplorerError`, so one `except` catches
them all, and each keeps the built-in class a caller would expect."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import xla_explorer as xe


def package_exception_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(xe.__path__, "xla_explorer."):
        module = importlib.import_module(info.name)
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, BaseException) and c.__module__ == module.__name__]
    return found


def test_every_error_derives_from_the_package_base():
    classes = package_exception_classes()
    assert {c.__name__ for c in classes} >= {"CompileError", "TraceError", "VerifyError",
                                             "HloParseError", "PassClaimError", "CellError"}
    assert [c.__qualname__ for c in classes if not issubclass(c, xe.XlaExplorerError)] == []


def test_errors_keep_the_builtin_class_callers_expect():
    assert issubclass(xe.HloParseError, ValueError) and issubclass(xe.VerifyError, ValueError)
    with_python = xe.errors.as_python_class(OverflowError)
    assert issubclass(with_python, OverflowError) and issubclass(with_python, xe.TraceError)
