"""YAML reading shared by the generator and rangespec loaders.

Upstream reads these files with ``sigs.k8s.io/yaml``; a key given twice there is an error in strict mode
and a silent overwrite otherwise. pykueue never drops input silently, so a duplicate key is an error.
Nesting deeper than the manifests' reader allows is refused before parsing, as there (see
``pykueue.api.documents``): PyYAML's Python reader would otherwise overflow the stack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pykueue.api.documents import nesting_error


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str | Path) -> Any:
    """Read exactly one YAML document; raise ``OSError`` or ``ValueError`` with a one-line reason."""
    text = Path(path).read_text(encoding="utf-8-sig")
    too_deep = nesting_error(text)
    if too_deep is not None:
        raise ValueError(too_deep)
    try:
        docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]  # noqa: S506
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    if len(docs) > 1:
        raise ValueError(f"expected one YAML document, found {len(docs)}")
    return docs[0] if docs else None


def read_config(path: str | Path, error: type[Exception]) -> Any:
    """Read a generator or rangespec file; an unreadable file or bad YAML becomes ``error(source,
    [("", message)])`` so both loaders report it the same way."""
    source = str(path)
    try:
        return read_yaml(path)
    except OSError as exc:
        raise error(source, [("", f"cannot read: {exc.strerror or exc}")]) from None
    except ValueError as exc:
        raise error(source, [("", f"invalid YAML: {exc}")]) from None
