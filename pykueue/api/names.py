"""Kubernetes name and label syntax: each check returns the problems it finds as messages (empty = valid).

These are the apimachinery rules (``IsDNS1123Subdomain``, ``IsDNS1123Label``, ``IsQualifiedName``,
``IsValidLabelValue``) that Kueue's CRD patterns and webhooks rely on, plus the API server's name
generator for ``metadata.generateName`` (``names.SimpleNameGenerator``), made deterministic.
"""

from __future__ import annotations

import hashlib
import re

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def _check(value: str, max_len: int, pattern: re.Pattern[str], what: str) -> list[str]:
    errors = []
    if len(value) > max_len:
        errors.append(f"must be no more than {max_len} characters")
    if not pattern.fullmatch(value):
        errors.append(what)
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    """Object names of most kinds, references to them, and qualified-name prefixes."""
    return _check(value, 253, _DNS1123_SUBDOMAIN,
                  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'example.com')")


def dns1123_label(value: str) -> list[str]:
    """Namespace names and pod set names."""
    return _check(value, 63, _DNS1123_LABEL,
                  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                  "and must start and end with an alphanumeric character (e.g. 'my-name')")


def qualified_name(value: str) -> list[str]:
    """Label keys and resource names: an optional DNS-subdomain prefix and '/', then a name of 63 at most."""
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors = [f"prefix part {msg}" for msg in dns1123_subdomain(prefix)] if prefix else []
    if not name:
        errors.append("name part must be non-empty")
    else:
        if len(name) > 63:
            errors.append("name part must be no more than 63 characters")
        if not _QUALIFIED_NAME_PART.fullmatch(name):
            errors.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName', 'my.name', or '123-abc')"
            )
    return errors


def label_value(value: str) -> list[str]:
    """Label values (may be empty)."""
    return _check(value, 63, _LABEL_VALUE,
                  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                  "and must start and end with an alphanumeric character (e.g. 'MyValue', 'my_value', or '12345')")


# apimachinery's pkg/util/rand alphabet (no vowels, no look-alikes) and storage/names' lengths
GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATED_PREFIX_LENGTH = 63 - GENERATED_SUFFIX_LENGTH


def generated_name(prefix: str, seed: bytes) -> str:
    """What the API server makes of ``generateName: PREFIX``: the prefix cut to 58 characters plus 5
    characters of its alphabet. The server draws them at random; here they come from ``seed`` (a hash
    input the caller derives from the document), so the same input always gets the same name."""
    number = int.from_bytes(hashlib.sha256(seed).digest()[:8], "big")
    suffix = []
    for _ in range(GENERATED_SUFFIX_LENGTH):
        number, digit = divmod(number, len(GENERATED_ALPHABET))
        suffix.append(GENERATED_ALPHABET[digit])
    return prefix[:MAX_GENERATED_PREFIX_LENGTH] + "".join(suffix)
