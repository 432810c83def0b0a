"""What a page says of a system (submissions.system_desc.system_desc_facts), read from a real system_desc.json: words,
never system_desc.json's field names."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from submissions.system_desc import system_desc_facts

NB2_C2 = Path(__file__).resolve().parents[1] / "checker" / "fixtures" / "second-system" / "NB-2_c2.tar.gz"


def test_parallelism_is_named_in_words():
    with tarfile.open(NB2_C2) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("system_desc.json"))
        description = json.load(tar.extractfile(member))
    parallel = system_desc_facts(description)["parallel"]
    assert parallel == {
        "Tensor parallel": 1,
        "Pipeline parallel": 1,
        "Expert parallel": 1,
        "Data parallel": 2,
    }
    assert not any("_" in label for label in parallel)
