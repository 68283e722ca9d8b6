"""Re-record entries of tests/search/shipped_priors.json after a sample's text or its normal form
changed, with the weights read from the torch checkpoint the fixture was first recorded from (its
sha256 checked against the fixture): the numpy forward pass runs on the checkpoint's tensors instead
of the safetensors file's. Every other sample must reproduce its recorded entry (printed); only the
named samples are replaced, and only with --write. Needs torch. From the repository's root:

    git show f6ec6a4^:models/policy.pt > /tmp/policy.pt
    PYTHONPATH=. python tests/search/rerecord_priors.py /tmp/policy.pt reduce_sum.cu --write
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import torch

PT, names = Path(sys.argv[1]), {a for a in sys.argv[2:] if a != "--write"}
fixture = Path("tests/search/shipped_priors.json")
recorded = json.loads(fixture.read_text())
assert hashlib.sha256(PT.read_bytes()).hexdigest() == recorded["policy_pt_sha256"]
ckpt = torch.load(PT, map_location="cpu", weights_only=False)
tensors = {k: v.numpy() for k, v in {**ckpt["state_dict"], **ckpt["normalisation"]}.items()}

from cuopt.search import weights
weights.read = lambda path: tensors  # the checkpoint's tensors, not the safetensors file's
from cuopt.evaluate.evaluator import Variant
from cuopt.rewrite.context import Context
from cuopt.rewrite.engine import Engine
from cuopt.search.policies import load_policy
from cuopt.targets import collect
from tests.conftest import sample_files

policy, engine = load_policy("learned", {}), Engine.default()
got = {}
for t in collect(sample_files()):
    offers = engine.offers(Context(t.source.source, t.spec.launch, t.kernel.name, t.spec))
    bound = policy.bind(t.spec, t.kernel.name, frozenset(), recorded["device"])
    state = Variant(t.text, t.spec.launch)
    got[f"{t.path.name}:{t.kernel.name}"] = {"offers": [o.action.id for o in offers],
                                             "priors": bound.priors(state, offers), "value": bound.value(state)}
assert set(got) == set(recorded["samples"]), set(got) ^ set(recorded["samples"])
for key, exp in recorded["samples"].items():
    if key.split(":")[0] in names:
        continue
    g = got[key]
    ok = g["offers"] == exp["offers"] and max(abs(a - b) for a, b in zip(g["priors"], exp["priors"])) <= 1e-6 \
        and abs(g["value"] - exp["value"]) <= 1e-6
    print(("same " if ok else "CHANGED ") + key)
for key in recorded["samples"]:
    if key.split(":")[0] in names:
        recorded["samples"][key] = got[key]
        print("re-recorded", key, len(got[key]["offers"]), "offers")
if "--write" in sys.argv[1:]:
    fixture.write_text(json.dumps(recorded, indent=1) + "\n")
