"""YAML as the files users write are read (app manifests, scenario files): safe, and a key given
twice is refused with where it stands, where PyYAML would keep the last one silently."""

from __future__ import annotations

from typing import Any

import yaml  # type: ignore[import-untyped]


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
