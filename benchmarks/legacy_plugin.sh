#!/bin/bash
# The 0.1-era ledger plug-in (tests/thirdparty/acme_ledger, unchanged since 0.1.0) installed as a third party's
# would be (a dist-info with its entry point): envgym check, then eval with the oracle, the null agent and a step
# cap. Prints check's table and deprecations, each run's warnings (counted) and outcomes. Issue 35's figures.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/site/acme_ledger-0.1.0.dist-info" && cd "$WORK"
printf "Metadata-Version: 2.1\nName: acme-ledger\nVersion: 0.1.0\n" > site/acme_ledger-0.1.0.dist-info/METADATA
printf "[envgym.environments]\nledger = acme_ledger:register_all\n" > site/acme_ledger-0.1.0.dist-info/entry_points.txt
export PYTHONPATH=$WORK/site:$REPO/tests/thirdparty/acme_ledger PYTHONWARNINGS=default::DeprecationWarning
E=$REPO/.venv/bin/envgym
SUITE=$REPO/tests/thirdparty/acme_ledger/acme_ledger/tasks
echo "== check"; $E check ledger/books-v1 2>&1 | tail -25; echo "exit $?"
for a in oracle null; do echo "== eval $a"; $E eval --suite $SUITE --split all --agent $a --out runs/$a --quiet 2>&1 | grep -v "^\s*$" | sort | uniq -c | sort -rn | head -12; done
echo "== eval oracle --max-steps 2"; $E eval --suite $SUITE --split all --agent oracle --max-steps 2 --out runs/capped --quiet 2>&1 | sort | uniq -c | head; 
"$REPO/.venv/bin/python" - <<'P'
import json, pathlib
for run in ("oracle", "null", "capped"):
    recs = [json.loads(l) for l in pathlib.Path(f"runs/{run}/records.jsonl").read_text().splitlines()]
    print(run, len(recs), "success", sum(r["outcome"] == "success" for r in recs), "outcomes", sorted({r["outcome"] for r in recs}), "blames", sorted({str(r.get("blame")) for r in recs}))
P
