"""YAML as the files users write are read (app manifests, scenario files): safe, and a key given
twice is refused with where it stands, where PyYAML would keep the last one silently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]


class FileRefused(ValueError):
    """A file a user wrote (or what was asked of it) refused: one line per problem, all of them at once."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


class StrictLoader(yaml.SafeLoader):  # type: ignore[misc]
    """A SafeLoader that refuses a key given twice."""


def _mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"{key!r} is given twice: give each field once", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load(text: str) -> Any:
    """The document TEXT holds; yaml.YAMLError (a ConstructorError for a key given twice) otherwise."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader)


def read_mapping(file: Path, where: str, refused: type[FileRefused], kind: Callable[[Any], str], schema: str) -> dict[str, Any]:
    """The mapping of fields FILE holds, or REFUSED in one line naming WHERE (the file as the user gave it): it
    cannot be read, it is not YAML (with the line), or it holds something else (its KIND, and the SCHEMA to see)."""
    try:
        data = load(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise refused([f"{where}: cannot be read: {error.strerror}"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise refused([f"{where}: not valid YAML{line}: {getattr(error, 'problem', None) or error}"]) from None
    if not isinstance(data, dict):
        raise refused([f"{where}: not a mapping of fields but {kind(data)}; see {schema}"])
    return data
