"""A griffe extension (mkdocs.yml) that documents DynamoStore's factory methods.

``DynamoStore.atomic_counter`` and the four others are made at import time by ``_factory``
(aioseq/_store.py): their docstring and signature exist only at run time, so griffe's static
analysis sees five undocumented attributes and the reference skipped them. This replaces each
with a method: the docstring ``_factory`` writes, and the parameters of the class's
``__init__`` without its ``store`` (what ``_factory`` copies into ``__signature__``).
"""

from __future__ import annotations

from typing import Any

import griffe

STORE = "aioseq._store.DynamoStore"


class Factories(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "aioseq":
            return
        store = loader.modules_collection.get_member(STORE)
        from aioseq._store import DynamoStore as runtime

        for name, member in list(store.members.items()):
            value = getattr(member, "value", None)
            if not member.is_attribute or not str(value).startswith("_factory("):
                continue
            made = getattr(runtime, name)
            returned = made.__signature__.return_annotation  # the class's name
            init = loader.modules_collection.get_member(_class_path(pkg, returned)).members[
                "__init__"
            ]
            self_parameter = griffe.Parameter("self", kind=griffe.ParameterKind("positional-only"))
            method = griffe.Function(
                name,
                lineno=member.lineno,
                endlineno=member.endlineno,
                parameters=griffe.Parameters(self_parameter, *list(init.parameters)[2:]),
                returns=griffe.ExprName(returned, parent=pkg),
                docstring=griffe.Docstring(
                    made.__doc__,
                    parser=store.docstring.parser if store.docstring else None,
                    parser_options=store.docstring.parser_options if store.docstring else None,
                ),
            )
            store.set_member(name, method)
            method.docstring.parent = method  # type: ignore[union-attr]


def _class_path(pkg: griffe.Module, class_name: str) -> str:
    """The path of ``aioseq.<class_name>``'s definition (the package re-exports each class)."""
    target = pkg.members[class_name]
    return target.target_path if isinstance(target, griffe.Alias) else target.path
