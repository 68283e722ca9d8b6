"""The shipped policy (models/policy.safetensors, its metadata in policy.json) loads with torch
blocked and gives, on the root of every sample, the priors and value that the torch-checkpoint
reader gave for models/policy.pt (recorded in shipped_priors.json before the weights moved; a sample
whose text or reading changes is re-recorded with rerecord_priors.py beside this file)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, sample_files

RECORDED = Path(__file__).with_name("shipped_priors.json")

SCRIPT = """
import json, sys
sys.modules["torch"] = None  # any import of torch fails
from pathlib import Path
from cuopt.evaluate.evaluator import Variant
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search.policies import load_policy
from cuopt.targets import collect

device = json.loads(sys.argv[1])
policy, engine = load_policy("learned", {}), Engine.default()
out = {}
for t in collect([Path(p) for p in sys.argv[2:]]):
    offers = engine.offers(Context(t.source.source, t.spec.launch, t.kernel.name, t.spec))
    bound, state = policy.bind(t.spec, t.kernel.name, frozenset(), device), Variant(t.text, t.spec.launch)
    out[f"{t.path.name}:{t.kernel.name}"] = {"offers": [o.action.id for o in offers],
                                             "priors": bound.priors(state, offers), "value": bound.value(state)}
print(json.dumps(out))
"""


def test_the_shipped_policy_gives_the_recorded_priors_without_torch() -> None:
    recorded = json.loads(RECORDED.read_text())
    samples = sample_files()
    out = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(recorded["device"]), *map(str, samples)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert set(got) == set(recorded["samples"]) and len(got) >= len(samples)
    for name, expected in recorded["samples"].items():
        assert got[name]["offers"] == expected["offers"], name
        assert len(expected["priors"]) > 1, name
        assert max(abs(a - b) for a, b in zip(got[name]["priors"], expected["priors"])) <= 1e-6, name
        assert abs(got[name]["value"] - expected["value"]) <= 1e-6, name
