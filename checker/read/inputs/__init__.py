"""Turns user-given paths (bundles, run archives, folders) into a sandboxed bundle layout, safely.

Accepted inputs (any mix, kind detected from content, not from the file name):
  * a bundle folder: `<org>/<submission_id>/` itself (it has `results/`), or a folder holding exactly
    one such bundle up to two levels down;
  * a bundle archive: .tar.gz/.tgz, .tar.zst, .tar or .zip of such a folder;
  * official run archives (.tar.gz with a top folder c<C>/) and unpacked run folders (point.yaml plus
    performance/result_summary.json or events.jsonl[.zst]).

`archive` reads archives into the sandbox (checker.read.inputs.archive), `layout` finds the points in
it and in user folders, which are read in place and never written to (checker.read.inputs.layout),
`limits` holds the caps. Every refusal is a finding; nothing raises.

Rule ids emitted here (docs/input-safety.md has examples and fixes): input-unreadable,
input-multiple-bundles, required-file, duplicate-point, events-ambiguous, archive-path-traversal,
archive-absolute-path, archive-bad-name, archive-link, archive-special-file, archive-encrypted,
archive-too-many-members, archive-too-large, archive-ratio, archive-corrupt, archive-duplicate-member.
"""

from checker.read.inputs.layout import Layout, PointInput, open_inputs
from checker.read.inputs.limits import Limits

__all__ = ["Layout", "Limits", "PointInput", "open_inputs"]
