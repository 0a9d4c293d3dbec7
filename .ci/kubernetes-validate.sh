#!/usr/bin/env bash
# The Kubernetes manifests `vac campaign deploy` renders, validated against the Kubernetes
# schema (kubernetes-validate from PyPI, strict: no unknown field), and the ConfigMap checked
# to carry every file of the bundle byte for byte at its path. No cluster is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
vac=$(realpath "${VAC:-${CARGO_TARGET_DIR:-target}/debug/vac}")
venv=${VAC_K8S_VENV:-/tmp/vac-kubernetes-validate}
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'kubernetes-validate==1.37.0'
fi
work=$(mktemp -d /tmp/vac-k8s.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/contracts" "$work/src/plants/repo"
printf '[server]\nname = "x"\n' >"$work/src/contracts/x.toml"
printf 'hello\n' >"$work/src/plants/repo/README.md"
cat >"$work/src/campaign.toml" <<'TOML'
name = "K8s check"
[[target]]
id = "honest"
command = ["vac", "fixture", "--mode", "honest"]
contract = "contracts/x.toml"
plant = ["plants/repo:work/repo"]
TOML
for campaign in "$work/src/campaign.toml" results/thirdparty/campaign.toml; do
  name=$(basename "$(dirname "$campaign")")
  "$vac" campaign deploy "$campaign" --shards 3 --to "$work/$name" >/dev/null 2>&1
  "$venv/bin/kubernetes-validate" --strict "$work/$name/kubernetes.yaml" "$work/$name/kubernetes-merge.yaml"
  python3 - "$work/$name" <<'PY'
import base64, os, sys
root = sys.argv[1]
text = open(os.path.join(root, "kubernetes.yaml")).read()
data = dict(l.strip().split(": ", 1) for l in text.split("binaryData:\n", 1)[1].split("\n---", 1)[0].splitlines())
items = [l.strip() for l in text.splitlines() if l.strip().startswith("- { key: f")]
assert len(items) == len(data), (items, data)
for item in items:
    key = item.split("key: ", 1)[1].split(",", 1)[0]
    path = item.split("path: ", 1)[1].rsplit(" }", 1)[0].strip('"')
    with open(os.path.join(root, "campaign", path), "rb") as f:
        assert base64.b64decode(data[key]) == f.read(), path
print(f"kubernetes: {root}: the ConfigMap carries the bundle's {len(items)} files byte for byte")
PY
done
